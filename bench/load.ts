// The load generators and the server-side measurement `npm run bench` uses:
// autocannon for HTTP, h2load (Debian's nghttp2-client) for gRPC, and the server
// process's CPU time over the measured window read from /proc/<pid>/stat.
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { cpuMicros, runQueueWaitMicros } from "./proc-cpu.js";
import { log, pinned, root } from "./support.js";

/** One measured window: what the load generator saw and what the server spent. */
export interface Figure {
  rps: number;
  p50: number;
  p99: number;
  /** Answers received (2xx and others) in the window. */
  requests: number;
  errors: number;
  non2xx: number;
  /** Server utime+stime over the window divided by `requests`, µs. */
  cpuUsPerReq: number;
  /**
   * The same of the database and Redis servers together, when they run on this
   * machine (undefined otherwise): what keyhold's writes behind and shared
   * counters cost them, on the other core, beside the load generator.
   */
  storeCpuUsPerReq?: number;
  /**
   * How long the server's main thread waited, runnable, for a CPU over the window,
   * divided by `requests`, µs (proc-cpu.ts): its core taken by another process
   * (the database, Redis) or by the server's own helper threads, not its event loop's work.
   */
  waitUsPerReq?: number;
}

type Load = Omit<Figure, "cpuUsPerReq" | "storeCpuUsPerReq" | "waitUsPerReq">;

/** Runs `load` while reading the CPU time of the server, and of the stores' processes (`storePids`), before and after it. */
export function measured(serverPid: number, load: () => Load, storePids: readonly number[] = []): Figure {
  const storeCpu = () => storePids.reduce((sum, pid) => sum + cpuMicros(pid), 0);
  const before = cpuMicros(serverPid);
  const waitBefore = runQueueWaitMicros(serverPid);
  const storeBefore = storeCpu();
  const f = load();
  const spent = cpuMicros(serverPid) - before;
  const waited = runQueueWaitMicros(serverPid) - waitBefore;
  const storeSpent = storeCpu() - storeBefore;
  const perReq = (us: number) => (f.requests > 0 ? us / f.requests : Number.NaN);
  return { ...f, cpuUsPerReq: perReq(spent), waitUsPerReq: perReq(waited), ...(storePids.length > 0 ? { storeCpuUsPerReq: perReq(storeSpent) } : {}) };
}

/**
 * `measured` for a load that runs beside others (bench/ab.ts, BENCH_AB_TOGETHER):
 * the server's CPU over its own window; no stores' CPU, which no one build's load
 * could be told from the others' by.
 */
export async function measuredAsync(serverPid: number, load: () => Promise<Load>): Promise<Figure> {
  const before = cpuMicros(serverPid);
  const f = await load();
  const spent = cpuMicros(serverPid) - before;
  return { ...f, cpuUsPerReq: f.requests > 0 ? spent / f.requests : Number.NaN };
}

export interface HttpLoad {
  url: string;
  body: string;
  /** A file of bodies (a JSON array of strings) to go through instead of `body` alone (many-bodies.ts). */
  bodiesFile?: string;
  auth?: string;
  connections: number;
}

/** autocannon's command line: `seconds` of load, or exactly `amount` requests when given. */
function autocannonArgs(l: HttpLoad, seconds: number, amount?: number): string[] {
  if (l.bodiesFile !== undefined)
    return [
      path.join(root, "dist", "bench", "many-bodies.js"),
      l.url,
      String(l.connections),
      String(seconds),
      amount === undefined ? "-" : String(amount),
      l.auth ?? "",
      l.bodiesFile,
    ];
  const span = amount === undefined ? ["-d", String(seconds)] : ["-a", String(amount)];
  const args = [
    path.join(root, "node_modules", "autocannon", "autocannon.js"),
    "-c",
    String(l.connections),
    ...span,
    "-m",
    "POST",
    "-H",
    "content-type=application/json",
    "-b",
    l.body,
    "-j",
  ];
  if (l.auth) args.push("-H", `authorization=${l.auth}`);
  args.push(l.url);
  return args;
}

// biome-ignore lint/suspicious/noExplicitAny: autocannon's result is untyped JSON
function toLoad(out: any, seconds: number, amount?: number): Load & { ok: number } {
  const ok = Number(out["2xx"] ?? 0);
  const non2xx = Number(out.non2xx ?? 0);
  const requests = ok + non2xx;
  const elapsed = Number(out.duration ?? seconds) || seconds;
  return {
    rps: amount === undefined ? out.requests.average : requests / elapsed,
    p50: out.latency.p50,
    p99: out.latency.p99,
    requests,
    errors: out.errors,
    non2xx,
    ok,
  };
}

/** autocannon for `seconds`, or for exactly `amount` requests when given; on CPU 1. */
export function autocannon(l: HttpLoad, seconds: number, amount?: number): Load & { ok: number } {
  const [cmd, a] = pinned(1, process.execPath, autocannonArgs(l, seconds, amount));
  const out = JSON.parse(execFileSync(cmd, a, { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "ignore"] }).toString());
  return toLoad(out, seconds, amount);
}

/** autocannon for `seconds`, not waited for: several can run at once (one per instance); on `cpu` when given, else not pinned. */
export function autocannonAsync(l: HttpLoad, seconds: number, cpu?: number): Promise<Load & { ok: number }> {
  const [cmd, a] = cpu === undefined ? [process.execPath, autocannonArgs(l, seconds)] : pinned(cpu, process.execPath, autocannonArgs(l, seconds));
  return new Promise((resolve, reject) => {
    execFile(cmd, a, { maxBuffer: 64 << 20 }, (err, stdout) => {
      if (err) return reject(err);
      try {
        resolve(toLoad(JSON.parse(stdout), seconds));
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** Whether h2load answers, installing Debian's nghttp2-client when we are root and apt-get exists. */
export function ensureH2load(): boolean {
  const has = () => {
    try {
      execFileSync("h2load", ["--version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  if (has()) return true;
  if (process.getuid?.() === 0 && fs.existsSync("/usr/bin/apt-get")) {
    log("h2load is missing: apt-get install nghttp2-client");
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    try {
      execFileSync("apt-get", ["install", "-y", "-q", "--no-install-recommends", "nghttp2-client"], { stdio: "ignore", env });
    } catch {
      try {
        execFileSync("apt-get", ["update", "-q"], { stdio: "ignore", env });
        execFileSync("apt-get", ["install", "-y", "-q", "--no-install-recommends", "nghttp2-client"], { stdio: "ignore", env });
      } catch {
        // reported below
      }
    }
  }
  return has();
}

export interface GrpcLoad {
  port: number;
  path: string;
  /** The request message, serialized. */
  message: Uint8Array;
  auth?: string;
  connections: number;
}

/** h2load's command line for `seconds` of `l`, its message frame and log in `dir`. */
function h2loadArgs(l: GrpcLoad, seconds: number, dir: string): string[] {
  // One gRPC message frame: no compression, 4-byte big-endian length, the message.
  const frame = Buffer.alloc(5 + l.message.length);
  frame.writeUInt32BE(l.message.length, 1);
  Buffer.from(l.message).copy(frame, 5);
  fs.writeFileSync(path.join(dir, "body"), frame);
  const args = ["-c", String(l.connections), "-m", "1", "-t", "1", "-D", String(seconds), "-d", path.join(dir, "body")];
  args.push("-H", "content-type: application/grpc", "-H", "te: trailers", `--log-file=${path.join(dir, "log")}`);
  if (l.auth) args.push("-H", `authorization: ${l.auth}`);
  args.push(`http://127.0.0.1:${l.port}${l.path}`);
  return args;
}

/** What h2load printed (`out`) and logged (in `dir`), as a Load. */
function h2loadResult(out: string, seconds: number, dir: string): Load {
  const done = Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(out)?.[1] ?? 0);
  const failed = Number(/(\d+) failed/.exec(out)?.[1] ?? 0);
  const errored = Number(/(\d+) errored/.exec(out)?.[1] ?? 0);
  const non2xx = Number(
    /status codes: \d+ 2xx, \d+ 3xx, (\d+) 4xx, (\d+) 5xx/
      .exec(out)
      ?.slice(1)
      .reduce((s, x) => s + Number(x), 0) ?? 0,
  );
  const times = fs
    .readFileSync(path.join(dir, "log"), "utf8")
    .trim()
    .split("\n")
    .map((line) => Number(line.split("\t")[2]) / 1000)
    .filter((x) => Number.isFinite(x))
    .sort((x, y) => x - y);
  const pct = (q: number) => times[Math.min(times.length - 1, Math.floor((times.length * q) / 100))] ?? 0;
  return { rps: done / seconds, p50: pct(50), p99: pct(99), requests: done, errors: failed + errored, non2xx };
}

/** h2load for `seconds` with one gRPC message per request; on CPU 1. Warm up with a short call first. */
export function h2load(l: GrpcLoad, seconds: number): Load {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-bench-"));
  try {
    const [cmd, a] = pinned(1, "h2load", h2loadArgs(l, seconds, dir));
    return h2loadResult(execFileSync(cmd, a, { maxBuffer: 16 << 20 }).toString(), seconds, dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** h2load as above, not waited for: several can run at once (bench/ab.ts, BENCH_AB_TOGETHER). */
export function h2loadAsync(l: GrpcLoad, seconds: number): Promise<Load> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-bench-"));
  const [cmd, a] = pinned(1, "h2load", h2loadArgs(l, seconds, dir));
  return new Promise<Load>((resolve, reject) => {
    execFile(cmd, a, { maxBuffer: 16 << 20 }, (err, stdout) => {
      if (err) return reject(err);
      try {
        resolve(h2loadResult(stdout, seconds, dir));
      } catch (e) {
        reject(e);
      }
    });
  }).finally(() => fs.rmSync(dir, { recursive: true, force: true }));
}
