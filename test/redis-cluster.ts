// A private Redis Cluster for the tests: three masters (no replicas), each a
// redis-server process on a free loopback port, data in a temporary folder.
// Starting one takes about a second here; it is shared by the whole run
// (global-setup.ts) so that the RedisLimiter tests and the two-instance tests
// run against a cluster as well as against one Redis.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { redisInstalled } from "./redis-processes.js";

const run = promisify(execFile);

export interface RedisClusterProcess {
  /** REDIS_URL for keyhold: redis-cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3 */
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

/** A port free for the node and for its cluster bus (port + 10000). */
async function freePortPair(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once("error", () => resolve(false));
      s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 35_000);
    if ((await free(port)) && (await free(port + 10_000))) return port;
  }
  throw new Error("no free port pair for a Redis Cluster node");
}

async function clusterState(port: number): Promise<string> {
  try {
    const { stdout } = await run("redis-cli", ["-p", String(port), "cluster", "info"], { timeout: 2_000 });
    return /cluster_state:(\w+)/.exec(stdout)?.[1] ?? "unknown";
  } catch {
    return "down";
  }
}

/** Starts the cluster, or answers undefined when redis-server or redis-cli is not installed. */
export async function startRedisCluster(masters = 3): Promise<RedisClusterProcess | undefined> {
  if (!(await redisInstalled())) return undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-redis-cluster-"));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePortPair();
      ports.push(port);
      const nodeDir = path.join(dir, String(port));
      fs.mkdirSync(nodeDir);
      // biome-ignore format: one option per line pair reads as a table
      const child = spawn("redis-server", [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", nodeDir,
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "3000",
        "--save", "", "--appendonly", "no",
      ], { stdio: "ignore" });
      children.push(child);
    }
    for (const port of ports) {
      for (let k = 0; (await clusterState(port)) === "down"; k++) {
        if (k > 50) throw new Error(`redis node on port ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"], { timeout: 20_000 });
    const end = Date.now() + 20_000;
    while (!(await Promise.all(ports.map(clusterState))).every((s) => s === "ok")) {
      if (Date.now() > end) throw new Error("the Redis Cluster did not reach cluster_state:ok within 20 s");
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(",")}`, ports, stop };
}
