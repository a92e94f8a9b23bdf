// Reads the configuration, opens (or starts) the database, migrates, serves the
// JSON API + Connect on PORT and gRPC on GRPC_PORT, and shuts down cleanly on
// SIGTERM/SIGINT: stop accepting, finish in-flight requests, write what was
// recorded behind them, close, exit 0 (1 when something was cut or not written).
import "./server/v8-flags.js";
import pino, { type Logger } from "pino";
import { NoDatabaseServerError } from "./embedded-db/private-server.js";
import { startGrpcServer } from "./grpc/server.js";
import { buildServer } from "./server/bootstrap.js";
import { ConfigError, loadConfig } from "./server/config.js";
import { openConfiguredDatabase } from "./server/database.js";
import { type Behind, buildDeps, type Runtime } from "./server/deps.js";
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
    // The whole shutdown fits in SHUTDOWN_TIMEOUT_MS + SHUTDOWN_FLUSH_TIMEOUT_MS (the
    // number to size an orchestrator's grace period by): writing behind gets what
    // the requests leave of it.
    const writtenBy = Date.now() + config.shutdownTimeoutMs + config.shutdownFlushTimeoutMs;
    // Guards the drain: its own deadline below cuts what is still running at SHUTDOWN_TIMEOUT_MS.
    const force = setTimeout(() => {
      log.error({ notWritten: runtime.behind() }, "shutdown took too long finishing requests; exiting");
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
    clearTimeout(force);
    const written = await writeBehind(runtime, writtenBy, log);
    await analyticsDb?.close();
    await db.close();
    log.info("stopped");
    process.exit(written ? 0 : 1);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * Writes what the requests recorded behind them (analytics events, last-used
 * times) by `until` (Unix ms): a write the database refuses is tried again until
 * then, progress is logged every 5 s, and when the time runs out the process
 * exits 1 with what was not written (a batch in flight counted in) in its last
 * log line. Measured 2026-11-28: after 170,000 verifications of cold keys
 * (1,000,000 in a database with a 128 MB buffer pool), 44,000-49,000 events were
 * waiting and took 12-15 s to write; the 5 s the shutdown used to give them
 * lost them.
 */
async function writeBehind(runtime: Runtime, until: number, log: Logger): Promise<boolean> {
  const waiting = runtime.behind();
  if (unwritten(waiting) > 0) log.info(waiting, "writing what the requests recorded behind them");
  const progress = setInterval(() => log.info(runtime.behind(), "still writing behind"), 5_000);
  const lost = (why: string) => {
    const left = runtime.behind();
    log.error({ notWritten: left }, `exiting with ${describeBehind(left)} not written: ${why}`);
  };
  const force = setTimeout(
    () => {
      lost("SHUTDOWN_TIMEOUT_MS + SHUTDOWN_FLUSH_TIMEOUT_MS ran out");
      process.exit(1);
    },
    Math.max(0, until - Date.now()),
  );
  try {
    await runtime.close(until);
  } finally {
    clearInterval(progress);
    clearTimeout(force);
  }
  if (unwritten(runtime.behind()) === 0) return true;
  lost("the database did not take them in time");
  return false;
}

const unwritten = (b: Behind): number => b.analyticsEvents + b.lastUsedKeys + b.lastUsedRootKeys;

function describeBehind(b: Behind): string {
  const parts = [
    b.analyticsEvents > 0 ? `${b.analyticsEvents} analytics events` : "",
    b.lastUsedKeys > 0 ? `the last-used times of ${b.lastUsedKeys} keys` : "",
    b.lastUsedRootKeys > 0 ? `the last-used times of ${b.lastUsedRootKeys} root keys` : "",
  ].filter((p) => p !== "");
  return parts.length === 0 ? "nothing" : parts.join(", ");
}

/** Resolves once the event loop has polled its sockets again, so bytes that arrived before now have been read. */
function afterNextPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

main().catch((err) => {
  process.stderr.write(`keyhold: could not start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
