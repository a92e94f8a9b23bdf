// Reads the configuration, opens (or starts) the database, migrates, serves the
// JSON API + Connect on PORT and gRPC on GRPC_PORT, and shuts down cleanly on
// SIGTERM/SIGINT: stop accepting, finish in-flight requests, flush, close, exit 0.
import "./server/v8-flags.js";
import pino from "pino";
import { NoDatabaseServerError } from "./embedded-db/private-server.js";
import { startGrpcServer } from "./grpc/server.js";
import { buildServer } from "./server/bootstrap.js";
import { ConfigError, loadConfig } from "./server/config.js";
import { openConfiguredDatabase } from "./server/database.js";
import { buildDeps } from "./server/deps.js";
import { services } from "./server/registry.js";
import { migrate, openDatabase } from "./storage/db.js";

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`keyhold: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ level: config.logLevel });
  let db: Awaited<ReturnType<typeof openConfiguredDatabase>>;
  try {
    db = await openConfiguredDatabase(config.databaseUrl, (line) => log.info(line), {
      connectTimeoutMs: config.dbConnectTimeoutMs,
      queryTimeoutMs: config.dbQueryTimeoutMs,
    });
  } catch (err) {
    if (err instanceof NoDatabaseServerError) {
      process.stderr.write(`keyhold: ${err.message}\n`);
      process.exit(3);
    }
    log.fatal({ err }, (err as Error).message);
    process.exit(3);
  }
  let stopping = false;
  const early = async () => {
    if (stopping) return;
    stopping = true;
    await db.close();
    process.exit(0);
  };
  // `on`, not `once`: under `npm start` the signal arrives twice (npm forwards the
  // one its process group got), and a second one with no listener would kill the
  // process mid-drain.
  process.on("SIGTERM", early);
  process.on("SIGINT", early);

  await migrate(db.pool, (line) => log.info(line));
  // ANALYTICS_DATABASE_URL: events and their roll-ups go to a server of their own
  // (keyhold's schema is migrated there too; only the analytics tables are used).
  let analyticsDb: Awaited<ReturnType<typeof openDatabase>> | undefined;
  if (config.analyticsDatabaseUrl !== undefined) {
    analyticsDb = await openDatabase(config.analyticsDatabaseUrl, { connectTimeoutMs: config.dbConnectTimeoutMs, queryTimeoutMs: config.dbQueryTimeoutMs });
    await migrate(analyticsDb.pool, (line) => log.info({ database: "analytics" }, line));
  }
  const runtime = buildDeps(config, db.pool, log, undefined, analyticsDb?.pool);
  await runtime.invalidations.start(250);
  const entries = services(runtime.deps);
  const app = await buildServer({ config, deps: runtime.deps, services: entries });
  await app.listen({ host: config.host, port: config.port });
  const grpcServer = await startGrpcServer(runtime.deps, entries, {
    docsBase: config.docsBaseUrl,
    host: config.host,
    port: config.grpcPort,
    bodyLimitBytes: config.bodyLimitBytes,
    redisConfigured: config.redisUrl !== undefined,
    reflection: config.grpcReflection,
  });
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  log.info({ database: db.description, analyticsDatabase: analyticsDb?.description, port, grpcPort: grpcServer.port }, "keyhold is serving");

  process.removeListener("SIGTERM", early);
  process.removeListener("SIGINT", early);
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => {
      log.error("shutdown took too long; exiting");
      process.exit(1);
    }, config.shutdownTimeoutMs + 5_000);
    force.unref();
    // A request that reached this process before the signal but is not read yet
    // would look like an idle connection and be cut: let the loop read it first.
    await afterNextPoll();
    // A connection goes idle when its last in-flight request is answered: close it
    // then, instead of waiting for its keep-alive timeout.
    const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
    // Requests still running at the deadline are cut, as gRPC calls are.
    const deadline = setTimeout(() => {
      log.warn("shutdown timeout reached: closing the connections still busy");
      app.server.closeAllConnections();
    }, config.shutdownTimeoutMs);
    await Promise.all([app.close(), grpcServer.close(config.shutdownTimeoutMs)]);
    clearInterval(reaper);
    clearTimeout(deadline);
    await runtime.close();
    await analyticsDb?.close();
    await db.close();
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** Resolves once the event loop has polled its sockets again, so bytes that arrived before now have been read. */
function afterNextPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

main().catch((err) => {
  process.stderr.write(`keyhold: could not start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
