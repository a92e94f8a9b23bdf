// A private Redis Sentinel set-up for a test: a master, one replica and one
// sentinel (quorum 1, the master judged down after 1 s), each a redis-server
// process on a free loopback port. The test owns it: it may kill the master.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort, redisInstalled } from "./redis-processes.js";

const run = promisify(execFile);

export interface RedisSentinelProcess {
  /** REDIS_URL for keyhold: redis-sentinel://127.0.0.1:<sentinel>/keyhold */
  url: string;
  master: { port: number; process: ChildProcess };
  replica: { port: number; process: ChildProcess };
  /** Where the sentinel says the master is now. */
  masterPort(): Promise<number | undefined>;
  stop(): Promise<void>;
}

async function answers(port: number): Promise<boolean> {
  try {
    return (await run("redis-cli", ["-p", String(port), "ping"], { timeout: 1_000 })).stdout.trim() === "PONG";
  } catch {
    return false;
  }
}

/** Starts it, or answers undefined when redis-server or redis-cli is not installed. */
export async function startRedisSentinel(): Promise<RedisSentinelProcess | undefined> {
  if (!(await redisInstalled())) return undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-redis-sentinel-"));
  const children: ChildProcess[] = [];
  const server = (args: string[]) => {
    const child = spawn("redis-server", args, { stdio: "ignore" });
    children.push(child);
    return child;
  };
  const stop = async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [masterPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
    // In the test's folder: the replica's first sync writes an RDB file to the working directory.
    const plain = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
    const master = server(["--port", String(masterPort), ...plain]);
    const replica = server(["--port", String(replicaPort), ...plain, "--replicaof", "127.0.0.1", String(masterPort)]);
    const conf = path.join(dir, "sentinel.conf");
    fs.writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        "bind 127.0.0.1",
        `dir ${dir}`,
        `sentinel monitor keyhold 127.0.0.1 ${masterPort} 1`,
        "sentinel down-after-milliseconds keyhold 1000",
        "sentinel failover-timeout keyhold 5000",
        "",
      ].join("\n"),
    );
    server([conf, "--sentinel"]);
    for (const port of [masterPort, replicaPort, sentinelPort]) {
      for (let k = 0; !(await answers(port)); k++) {
        if (k > 50) throw new Error(`redis on port ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const masterPortNow = async () => {
      try {
        const { stdout } = await run("redis-cli", ["-p", String(sentinelPort), "sentinel", "get-master-addr-by-name", "keyhold"], { timeout: 1_000 });
        const port = Number(stdout.trim().split("\n")[1]);
        return Number.isInteger(port) && port > 0 ? port : undefined;
      } catch {
        return undefined;
      }
    };
    // The replica is in sync and the sentinel knows of it before the test starts.
    const end = Date.now() + 15_000;
    for (;;) {
      const info = (await run("redis-cli", ["-p", String(replicaPort), "info", "replication"], { timeout: 1_000 })).stdout;
      const known = (await run("redis-cli", ["-p", String(sentinelPort), "sentinel", "replicas", "keyhold"], { timeout: 1_000 })).stdout;
      if (/master_link_status:up/.test(info) && known.includes(String(replicaPort))) break;
      if (Date.now() > end) throw new Error("the replica or the sentinel was not ready within 15 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      url: `redis-sentinel://127.0.0.1:${sentinelPort}/keyhold`,
      master: { port: masterPort, process: master },
      replica: { port: replicaPort, process: replica },
      masterPort: masterPortNow,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
