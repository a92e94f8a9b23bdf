// What the benchmarks share: processes pinned to a core, a keyhold server process
// on free ports, a root-key POST, and a fresh database on DATABASE_URL's server
// (or the private one) that is dropped afterwards.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type PrivateServer, startPrivateServer } from "../src/embedded-db/private-server.js";
import { openDatabase } from "../src/storage/db.js";
import { connectRedis, parseRedisUrl } from "../src/storage/redis-client.js";

export const here = path.dirname(fileURLToPath(import.meta.url)); // dist/bench
export const root = path.resolve(here, "..", "..");
export const log = (s: string) => process.stderr.write(`bench: ${s}\n`);

export const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-c", "0", "true"]);
    return true;
  } catch {
    return false;
  }
})();

/** The command line that runs `cmd` on one core (unpinned without taskset). */
export const pinned = (cpu: number, cmd: string, args: string[]): [string, string[]] =>
  hasTaskset ? ["taskset", ["-c", String(cpu), cmd, ...args]] : [cmd, args];

/** The median (the mean of the two middle values for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    // Gone already: exited, or killed by a signal (exitCode stays null then).
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

/** keyhold from dist/ on free ports (on core `cpu`, or unpinned with null), with extra Node.js flags; resolves when it answers liveness. */
export async function startKeyhold(
  env: Record<string, string> = {},
  cpu: number | null = 0,
  nodeFlags: string[] = [],
  /** The checkout whose build runs (bench/ab.ts compares several); this one by default. */
  checkout: string = root,
  /** A program that runs Node.js, and its arguments before Node's (bench/ab.ts's valgrind). */
  launcher: string[] = [],
): Promise<{ child: ChildProcess; base: string; grpcPort: number }> {
  const port = await freePort();
  const grpcPort = await freePort();
  const main = [...nodeFlags, path.join(checkout, "dist", "src", "main.js")];
  const [program, programArgs] = launcher.length === 0 ? [process.execPath, main] : [launcher[0] as string, [...launcher.slice(1), process.execPath, ...main]];
  const [cmd, args] = cpu === null ? [program, programArgs] : pinned(cpu, program, programArgs);
  const child = spawn(cmd, args, {
    cwd: checkout,
    env: { ...process.env, LOG_LEVEL: "warn", ...env, PORT: String(port), GRPC_PORT: String(grpcPort) },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`keyhold exited with ${child.exitCode ?? child.signalCode}`);
    if (
      await fetch(`${base}/v2/liveness`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, base, grpcPort };
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill("SIGTERM");
  throw new Error("keyhold did not start");
}

/** A root key with every permission in a new workspace, made by keyhold's CLI on `databaseUrl`. */
export function createRootKey(databaseUrl: string, workspace: string): string {
  const out = execFileSync(process.execPath, [path.join(root, "bin", "keyhold.js"), "root-key", "create", "--workspace", workspace, "--permissions", "*"], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return (JSON.parse(out.toString()) as { rootKey: string }).rootKey;
}

/** POST /v2/<op> with a root key; the answer's data, or an error naming the status. */
export async function post(base: string, op: string, body: unknown, rootKey: string): Promise<Record<string, unknown>> {
  const send = () =>
    fetch(`${base}/v2/${op}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
  // A kept-alive connection idle for the server's keep-alive timeout (72 s) may be
  // closed just as it is reused after a long measurement: sent again on a new one.
  const res = await send().catch((err: Error & { cause?: { code?: string } }) => {
    if (["UND_ERR_SOCKET", "EPIPE", "ECONNRESET"].includes(err.cause?.code ?? "")) return send();
    throw err;
  });
  const json = (await res.json()) as { data: Record<string, unknown> };
  if (res.status !== 200) throw new Error(`${op}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

export interface BenchDatabase {
  name: string;
  /** A DATABASE_URL for it; keyhold creates and migrates it on start. */
  url: string;
  /** Drops it and stops the private server, if one was started. */
  drop(): Promise<void>;
}

/** A database named `<prefix>_<timestamp>` (or `name`, an existing one) on DATABASE_URL's server, or on a private one. */
export async function freshDatabase(prefix: string, existing?: string): Promise<BenchDatabase> {
  if (existing !== undefined && !/^[A-Za-z0-9_]{1,64}$/.test(existing)) throw new Error(`not a database name: ${existing}`);
  const name = existing ?? `${prefix}_${Date.now()}`;
  let server: PrivateServer | undefined;
  let url: string;
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL);
    u.pathname = `/${name}`;
    url = u.toString();
  } else {
    server = await startPrivateServer({ projectDir: root, log });
    url = `mysql://root@localhost/${name}?socketPath=${encodeURIComponent(server.socketPath)}`;
  }
  return {
    name,
    url,
    async drop() {
      if (process.env.BENCH_ANALYTICS_KEEP === "1") {
        log(`kept database ${name} (BENCH_ANALYTICS_DATABASE=${name} reuses it)`);
        await server?.stop();
        return;
      }
      const db = await openDatabase(url).catch(() => undefined);
      if (db !== undefined) {
        await db.pool.query(`DROP DATABASE IF EXISTS \`${name}\``).catch((e: Error) => log(`could not drop ${name}: ${e.message}`));
        await db.close();
      }
      await server?.stop();
    },
  };
}

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** `pid` when it is a live process of this machine whose command name is one of `names`. */
function liveProcess(pid: number, names: readonly string[]): number | undefined {
  try {
    const comm = fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    return names.includes(comm) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the MySQL-compatible server behind `url` when it runs on this
 * machine (a local host or a socket, its pid file readable): its CPU is read
 * beside keyhold's, since on the bench's two cores it shares the load
 * generator's. undefined for a server elsewhere or a pid file out of reach.
 */
export async function localDatabasePid(url: string): Promise<number | undefined> {
  const u = new URL(url);
  if (!LOCAL_HOSTS.has(u.hostname) && !u.searchParams.has("socketPath")) return undefined;
  const db = await openDatabase(url).catch(() => undefined);
  if (db === undefined) return undefined;
  try {
    const [r] = (await db.pool.query("SELECT @@pid_file AS f")) as unknown as [{ f: string }[]];
    const file = r[0]?.f;
    if (file === undefined) return undefined;
    const pid = Number(fs.readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? liveProcess(pid, ["mariadbd", "mysqld"]) : undefined;
  } catch {
    return undefined;
  } finally {
    await db.close();
  }
}

/** The pid of the Redis behind a `redis://` REDIS_URL on this machine (INFO's process_id), else undefined. */
export async function localRedisPid(url: string): Promise<number | undefined> {
  const target = parseRedisUrl(url);
  if (target.mode !== "single" || !LOCAL_HOSTS.has(new URL(url).hostname)) return undefined;
  const redis = connectRedis(target, { commandTimeoutMs: 2_000, maxReconnectDelayMs: 1_000 });
  // A Redis that does not answer only leaves the column out; ioredis would print its errors otherwise.
  redis.on("error", () => undefined);
  try {
    // Commands are not queued before the connection is up (connectRedis): wait for it, 2 s at most.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Redis did not answer")), 2_000);
      redis.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const pid = Number(/^process_id:(\d+)/m.exec(await redis.info("server"))?.[1]);
    return Number.isInteger(pid) && pid > 0 ? liveProcess(pid, ["redis-server"]) : undefined;
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

/** Keys a many-keys scenario goes through (verifyCreditsMany). */
export const MANY_KEYS = 1_000;

/**
 * `n` keys made by `makeKey` (50 at a time), as a file of verifyKey bodies for
 * bench/many-bodies.ts: a JSON array of `{"key":…}` texts. Its path.
 */
export async function manyKeysFile(makeKey: () => Promise<string>, n = MANY_KEYS): Promise<string> {
  const keys: string[] = [];
  while (keys.length < n) keys.push(...(await Promise.all(Array.from({ length: Math.min(50, n - keys.length) }, makeKey))));
  return bodiesFile(keys);
}

/** A file of verifyKey bodies, one for each key, for bench/many-bodies.ts. Its path. */
export function bodiesFile(keys: readonly string[]): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-bench-")), "bodies.json");
  fs.writeFileSync(file, JSON.stringify(keys.map((key) => JSON.stringify({ key }))));
  return file;
}
