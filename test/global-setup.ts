// Runs once per test run (the project "others"): uses DATABASE_URL's server when it is set, otherwise
// starts (or joins) keyhold's private server, exactly as `npm start` would.
// Each test file then makes its own fresh database on that server.
import { spawn } from "node:child_process";
import net from "node:net";
import type { TestProject } from "vitest/node";
import { startPrivateServer } from "../src/embedded-db/private-server.js";
import { projectDir } from "../src/paths.js";
import { startRedisCluster } from "./redis-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** mysql:// URL of the server, without a database. */
    mysqlServer: string;
    /** redis:// URL for the shared-counter tests, or "" when no Redis can be had. */
    redisUrl: string;
    /** redis-cluster:// URL of a private 3-master Redis Cluster, or "" when redis-server or redis-cli is missing. */
    redisClusterUrl: string;
  }
}

/** Whether a Redis answers PING at this URL. */
function redisAnswers(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(u.port || 6379), u.hostname, () => socket.write("PING\r\n"));
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("data", (d) => {
      socket.destroy();
      resolve(d.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Redis for the tests: TEST_REDIS_URL, else the usual 127.0.0.1:6379, else a
 * private redis-server on a free port when the binary is installed. Without any,
 * the Redis tests are skipped and say why.
 */
async function provideRedis(project: TestProject): Promise<(() => void) | undefined> {
  const wanted = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
  if (await redisAnswers(wanted)) {
    project.provide("redisUrl", wanted);
    return undefined;
  }
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  const spawned = await new Promise<boolean>((resolve) => {
    child.once("error", () => resolve(false));
    child.once("spawn", () => resolve(true));
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; spawned && i < 50; i++) {
    if (await redisAnswers(url)) {
      console.log(`[tests] started a private redis-server on port ${port}`);
      project.provide("redisUrl", url);
      return () => child.kill("SIGTERM");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  console.log("[tests] no Redis at 127.0.0.1:6379 and no redis-server to start: the Redis tests are skipped (apt-get install redis-server)");
  project.provide("redisUrl", "");
  return undefined;
}

/** A private Redis Cluster, started once for the whole run. */
async function provideRedisCluster(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
  try {
    cluster = await startRedisCluster();
  } catch (err) {
    // Installed but would not start: a failure under CI, a skip (said plainly) elsewhere.
    if (process.env.CI) throw err;
    console.log(`[tests] the private Redis Cluster did not start (${(err as Error).message}): the Redis Cluster tests are skipped`);
    project.provide("redisClusterUrl", "");
    return undefined;
  }
  if (cluster === undefined)
    console.log("[tests] redis-server or redis-cli is missing: the Redis Cluster tests are skipped (apt-get install redis-server redis-tools)");
  else console.log(`[tests] started a private Redis Cluster: ${cluster.url}`);
  project.provide("redisClusterUrl", cluster?.url ?? "");
  return cluster?.stop;
}

export default async function setup(project: TestProject) {
  const stopCluster = await provideRedisCluster(project);
  let stopRedis0: (() => void) | undefined;
  const stopRedis = async () => {
    stopRedis0?.();
    await stopCluster?.();
  };
  try {
    stopRedis0 = await provideRedis(project);
    return await provideDatabase(project, stopRedis);
  } catch (err) {
    // Nothing started here is left running when setup fails.
    await stopRedis();
    throw err;
  }
}

export async function provideDatabase(project: TestProject, stopRedis: () => Promise<void>): Promise<() => Promise<void>> {
  const url = process.env.DATABASE_URL;
  if (url !== undefined && url !== "") {
    const u = new URL(url);
    u.pathname = "/";
    project.provide("mysqlServer", u.toString().replace(/\/$/, ""));
    return stopRedis;
  }
  const server = await startPrivateServer({ projectDir, log: (line) => console.log(`[tests] ${line}`) });
  project.provide("mysqlServer", `mysql://root@localhost/?socketPath=${encodeURIComponent(server.socketPath)}`);
  return async () => {
    await stopRedis();
    await server.stop();
  };
}
