// The bench reads the CPU of the database and Redis beside keyhold's (column
// "store µs"): these are the processes it finds, and what measured() makes of them.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { describe, expect, inject, it } from "vitest";
import { measured } from "../../bench/load.js";
import { localDatabasePid, localRedisPid } from "../../bench/support.js";

const comm = (pid: number) => fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
const redisUrl = inject("redisUrl");

describe("bench: the stores whose CPU is read beside keyhold's", () => {
  it("finds the database server of a local DATABASE_URL", async () => {
    const u = new URL(inject("mysqlServer"));
    u.pathname = "/mysql";
    const pid = await localDatabasePid(u.toString());
    expect(pid).toBeTypeOf("number");
    expect(["mariadbd", "mysqld"]).toContain(comm(pid as number));
  });

  it.runIf(redisUrl !== "")("finds the Redis of a local REDIS_URL", async () => {
    const pid = await localRedisPid(redisUrl);
    expect(pid).toBeTypeOf("number");
    expect(comm(pid as number)).toBe("redis-server");
  });

  it("reads no process for a server on another machine or a Redis Cluster", async () => {
    expect(await localDatabasePid("mysql://root@db.invalid:3306/keyhold")).toBeUndefined();
    expect(await localRedisPid("redis://cache.invalid:6379")).toBeUndefined();
    expect(await localRedisPid("redis-cluster://127.0.0.1:7000,127.0.0.1:7001")).toBeUndefined();
  });

  it("measured() divides the stores' CPU over the window by the answers", async () => {
    // A stand-in store: busy for 300 ms, then idle and alive until killed.
    const store = spawn(process.execPath, ["-e", "const end = Date.now() + 300; while (Date.now() < end); setInterval(() => {}, 1000);"]);
    try {
      const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      const load = () => {
        sleep(800);
        return { rps: 1000, p50: 1, p99: 1, requests: 1000, errors: 0, non2xx: 0 };
      };
      const f = measured(process.pid, load, [store.pid as number]);
      // 300 ms of CPU over 1,000 answers: ~300 µs each (less if the child started late in the window).
      expect(f.storeCpuUsPerReq).toBeGreaterThan(150);
      expect(f.storeCpuUsPerReq).toBeLessThan(450);
      expect(measured(process.pid, load).storeCpuUsPerReq).toBeUndefined();
      // This process's own wait for a CPU over the window, beside its CPU (proc-cpu.ts, tested in cold-load.test.ts).
      expect(f.waitUsPerReq).toBeGreaterThanOrEqual(0);
    } finally {
      store.kill();
    }
  });
});
