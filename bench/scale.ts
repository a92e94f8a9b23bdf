// The scale part of `npm run bench` (skip with BENCH_SCALE=0), run on a fresh
// database `keyhold_bench_scale_<timestamp>` on the same server (dropped at the end):
//   1. two keyhold instances vs one, hot keys.verifyKey
//   2. growth: hit and miss verification with BENCH_KEYS_SMALL (10,000) and
//      BENCH_KEYS_LARGE (1,000,000) keys in the database, keys seeded in bulk
//   3. the miss path sustained: the keys that fill the cache for 4., verified in
//      BENCH_COLD_RUNS (3) timed runs of equal size, the median against the target;
//      then BENCH_COLD_PACED_RUNS (2) runs of 20,000 more, paced at the target's
//      5,000 a second (the latency at that load, not at saturation)
//   4. memory: RSS of the instance with the large database and a full cache, and of
//      one started with CACHE_MAX_ENTRIES=100000 after verifying the same keys
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../src/storage/db.js";
import { type KeyOwner, seededKey, seedKeys } from "./seed-keys.js";
import { freshDatabase, localDatabasePid, localRedisPid, median } from "./support.js";

export interface Figure {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx?: number;
  ok?: number;
  valid?: number;
  requests?: number;
  /** Of the miss path: keyhold's CPU a verification over the timed part (µs), and the database's and Redis's together when they run here. */
  cpuUsPerReq?: number;
  storeCpuUsPerReq?: number;
  /** Of the miss path: how long keyhold's main thread waited, runnable, for a CPU, µs a verification (bench/proc-cpu.ts). */
  waitUsPerReq?: number;
  /** Paced runs (cold-load.ts, COLD_LOAD_RATE): the rate offered, and how late the generator sent at its p99 (ms). */
  rate?: number;
  sendLagP99?: number;
}

export interface Helpers {
  root: string;
  here: string;
  seconds: number;
  hasTaskset: boolean;
  log: (s: string) => void;
  /** Starts `node dist/src/main.js` with extra env; cpu null = not pinned. */
  startKeyhold(env: Record<string, string>, cpu: number | null): Promise<{ child: ChildProcess; base: string }>;
  stop(child: ChildProcess): Promise<void>;
  post(base: string, op: string, body: unknown, rootKey: string): Promise<Record<string, unknown>>;
}

const num = (name: string, def: number) => {
  const raw = process.env[name];
  return raw === undefined || raw === "" ? def : Number(raw);
};

function rssKb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0);
}

const mb = (kb: number) => kb / 1024;

export async function runScale(h: Helpers): Promise<{ scale: Record<string, unknown>; lines: string[] }> {
  const SMALL = num("BENCH_KEYS_SMALL", 10_000);
  const LARGE = num("BENCH_KEYS_LARGE", 1_000_000);
  const COLD = Math.min(num("BENCH_COLD_KEYS", 9_000), SMALL - 1, LARGE - SMALL);
  const MEMORY_KEYS = Math.max(0, Math.min(num("BENCH_MEMORY_KEYS", 150_000), LARGE - SMALL - COLD));
  const HIT_SECONDS = Math.min(5, h.seconds);
  const COLD_WARM_REQUESTS = num("BENCH_COLD_WARM", 3_000);
  const SUSTAINED_RUNS = Math.max(1, Math.floor(num("BENCH_COLD_RUNS", 3)));
  const PACED_RUNS = Math.max(0, Math.floor(num("BENCH_COLD_PACED_RUNS", 2)));
  const PACED_RATE = 5_000;
  const PACED_KEYS = 4 * PACED_RATE;
  const BOUND = 100_000;
  if (!(SMALL >= 2 && LARGE > SMALL)) throw new Error(`BENCH_KEYS_LARGE (${LARGE}) must exceed BENCH_KEYS_SMALL (${SMALL})`);

  const pin = (cpu: number | null, cmd: string, args: string[]): [string, string[]] =>
    h.hasTaskset && cpu !== null ? ["taskset", ["-c", String(cpu), cmd, ...args]] : [cmd, args];
  const acArgs = (url: string, body: string, auth: string, seconds: number, connections: number) => [
    path.join(h.root, "node_modules", "autocannon", "autocannon.js"),
    "-c",
    String(connections),
    "-d",
    String(seconds),
    "-m",
    "POST",
    "-H",
    "content-type=application/json",
    "-H",
    `authorization=${auth}`,
    "-b",
    body,
    "-j",
    url,
  ];
  // biome-ignore lint/suspicious/noExplicitAny: autocannon's result is untyped JSON
  const toFigure = (out: any): Figure => ({
    rps: out.requests.average,
    p50: out.latency.p50,
    p99: out.latency.p99,
    errors: out.errors,
    non2xx: out.non2xx,
    ok: out["2xx"],
  });
  const autocannon = (url: string, body: string, auth: string, seconds: number, connections: number, cpu: number | null): Promise<Figure> => {
    const [cmd, args] = pin(cpu, process.execPath, acArgs(url, body, auth, seconds, connections));
    return runJson(cmd, args).then(toFigure);
  };
  // Where its figures are used, the generator first warms up on a key the server has just verified (not timed): see cold-load.ts.
  // With `pids` ([keyhold, ...stores]), the CPU each spends a verification over the timed part (cold-load.ts reads it).
  const coldLoad = (url: string, auth: string, keys: string[], workers: number, warmKey?: string, pids?: number[], rate?: number): Promise<Figure> => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-cold-")), "keys.txt");
    fs.writeFileSync(file, `${keys.join("\n")}\n`);
    const [cmd, args] = pin(1, process.execPath, [
      path.join(h.here, "cold-load.js"),
      url,
      auth,
      file,
      String(workers),
      ...(warmKey === undefined ? [] : [warmKey, String(COLD_WARM_REQUESTS)]),
    ]);
    const env = { ...process.env, COLD_LOAD_RATE: rate === undefined ? "" : String(rate), ...(pids === undefined ? {} : { COLD_LOAD_PIDS: pids.join(",") }) };
    return runJson(cmd, args, env).finally(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  };

  // A fresh database on the same server.
  const database = await freshDatabase("keyhold_bench_scale");
  const { name: dbName, url } = database;
  const env = { DATABASE_URL: url };
  const redis = process.env.REDIS_URL ? " (REDIS_URL passed to every instance)" : "";
  // The database's (and Redis's) CPU beside keyhold's on the miss path, when they run on this machine.
  const storePids = [await localDatabasePid(url), process.env.REDIS_URL ? await localRedisPid(process.env.REDIS_URL) : undefined].filter(
    (p): p is number => p !== undefined,
  );
  h.log(`scale: fresh database ${dbName}${redis}`);
  const running = new Set<ChildProcess>();
  const start = async (extra: Record<string, string>, cpu: number | null) => {
    const k = await h.startKeyhold({ ...env, ...extra }, cpu);
    running.add(k.child);
    return k;
  };
  const stopK = async (child: ChildProcess) => {
    await h.stop(child);
    running.delete(child);
  };

  let db: Awaited<ReturnType<typeof openDatabase>> | undefined;
  try {
    // ---- setup: workspace + root key (CLI), an API, a hot key (API) ----
    const first = await start({}, null);
    const cli = JSON.parse(
      execFileSync(
        process.execPath,
        [path.join(h.root, "bin", "keyhold.js"), "root-key", "create", "--workspace", `bench_scale_${Date.now()}`, "--permissions", "*"],
        {
          cwd: h.root,
          env: { ...process.env, ...env },
          stdio: ["ignore", "pipe", "inherit"],
        },
      ).toString(),
    ) as { rootKey: string };
    const rk = cli.rootKey;
    const auth = `Bearer ${rk}`;
    const apiId = (await h.post(first.base, "apis.createApi", { name: "bench-scale" }, rk)).apiId as string;
    const created = await h.post(first.base, "keys.createKey", { apiId, prefix: "bench" }, rk);
    const hot = created.key as string;
    db = await openDatabase(url);
    const [ownerRows] = await db.pool.query("SELECT key_auth_id, api_id, workspace_id FROM `keys` WHERE id = ?", [created.keyId]);
    const o = (ownerRows as Array<{ key_auth_id: string; api_id: string; workspace_id: string }>)[0];
    if (!o) throw new Error("cannot read back the key created through the API");
    const owner: KeyOwner = { keyAuthId: o.key_auth_id, apiId: o.api_id, workspaceId: o.workspace_id };

    // ---- 1. two instances vs one ----
    h.log("scale: hot verifyKey, one instance at 50 connections vs two instances at 25 each (nothing pinned)");
    const hotBody = JSON.stringify({ key: hot });
    const verifyPath = "/v2/keys.verifyKey";
    await autocannon(first.base + verifyPath, hotBody, auth, 2, 50, null);
    const one = await autocannon(first.base + verifyPath, hotBody, auth, h.seconds, 50, null);
    const second = await start({}, null);
    await Promise.all([autocannon(first.base + verifyPath, hotBody, auth, 2, 25, null), autocannon(second.base + verifyPath, hotBody, auth, 2, 25, null)]);
    const [twoA, twoB] = await Promise.all([
      autocannon(first.base + verifyPath, hotBody, auth, h.seconds, 25, null),
      autocannon(second.base + verifyPath, hotBody, auth, h.seconds, 25, null),
    ]);
    const twoRps = twoA.rps + twoB.rps;
    await stopK(second.child);
    await stopK(first.child);
    const instances = {
      one,
      two: { rps: twoRps, perInstance: [twoA, twoB] },
      ratio: twoRps / one.rps,
      cpus: os.cpus().length,
      redis: Boolean(process.env.REDIS_URL),
    };

    // ---- 2. growth ----
    const seed = `${dbName}:${Math.random()}`;
    h.log(`scale: seeding ${SMALL} keys`);
    const smallRate = await seedKeys(db.pool, owner, seed, 0, SMALL);
    // Server on CPU 0, load on CPU 1, as in the rest of the bench. The cache holds
    // every key this run verifies (nothing evicted, nothing expires) for part 3.
    const big = await start(
      { CACHE_MAX_ENTRIES: String(Math.min(100_000_000, 2 * LARGE)), CACHE_MAX_BYTES: String(16 * 1024 ** 3), CACHE_TTL_MS: "3600000" },
      0,
    );
    const sanity = await h.post(big.base, "keys.verifyKey", { key: seededKey(seed, 0) }, rk);
    if (sanity.valid !== true) throw new Error(`a seeded key does not verify: ${JSON.stringify(sanity)}`);
    const hitBody = JSON.stringify({ key: seededKey(seed, 0) });
    const cpuPids = big.child.pid === undefined ? undefined : [big.child.pid, ...storePids];
    const measure = async (from: number, to: number): Promise<{ hit: Figure; miss: Figure; cold: string[]; rest: string[]; paced: string[] }> => {
      // Cold keys: a random sample of keys never verified before.
      const idx = Int32Array.from({ length: to - from }, (_, i) => from + i);
      for (let i = idx.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        const t = idx[i] as number;
        idx[i] = idx[j] as number;
        idx[j] = t;
      }
      const cold = Array.from(idx.subarray(0, COLD), (i) => seededKey(seed, i));
      const rest = Array.from(idx.subarray(COLD, COLD + MEMORY_KEYS), (i) => seededKey(seed, i));
      const paced = Array.from(idx.subarray(COLD + MEMORY_KEYS, COLD + MEMORY_KEYS + PACED_RUNS * PACED_KEYS), (i) => seededKey(seed, i));
      await autocannon(big.base + verifyPath, hitBody, auth, 1, 50, 1);
      const hit = await autocannon(big.base + verifyPath, hitBody, auth, HIT_SECONDS, 50, 1);
      const miss = await coldLoad(big.base + verifyPath, auth, cold, 50, seededKey(seed, 0), cpuPids);
      return { hit, miss, cold, rest, paced };
    };
    h.log(`scale: ${SMALL} keys: hit path (${HIT_SECONDS} s) and miss path (${COLD} cold keys)`);
    const small = await measure(1, SMALL);
    h.log(`scale: seeding up to ${LARGE} keys`);
    const largeRate = await seedKeys(db.pool, owner, seed, SMALL, LARGE);
    const [countRows] = await db.pool.query("SELECT COUNT(*) AS n FROM `keys`");
    const inDb = Number((countRows as Array<{ n: number }>)[0]?.n ?? 0);
    h.log(`scale: ${inDb} keys in the database: hit path and miss path`);
    const large = await measure(SMALL, LARGE);
    const growth = {
      small: { keys: SMALL, hit: small.hit, miss: small.miss },
      large: { keys: LARGE, keysInDatabase: inDb, hit: large.hit, miss: large.miss },
      ratio: {
        hitRps: large.hit.rps / small.hit.rps,
        hitP99: large.hit.p99 / Math.max(0.001, small.hit.p99),
        missRps: large.miss.rps / small.miss.rps,
        missP99: large.miss.p99 / Math.max(0.001, small.miss.p99),
      },
      seedKeysPerSecond: { small: smallRate, large: largeRate },
    };

    // ---- 3. the miss path sustained, and 4. memory ----
    // The keys that fill the cache for the memory figures go in SUSTAINED_RUNS
    // timed runs of equal size (~5 s each here): the miss path's target figure.
    // The growth samples above are ~1 s long, as long as the analytics
    // recorder's interval (it writes what gathered once a second,
    // src/domain/analytics/recorder.ts): whether a second's cold events are
    // written inside such a sample or just after it decided its p99 (8-38 ms
    // from one sample to the next, bench/README.md "Cold verification").
    const memKeys = large.rest;
    const runSize = Math.ceil(memKeys.length / SUSTAINED_RUNS);
    h.log(`scale: miss path sustained: ${memKeys.length} more cold keys in ${SUSTAINED_RUNS} runs (they also fill the cache)`);
    const sustainedRuns: Figure[] = [];
    for (let i = 0; i < memKeys.length; i += runSize)
      sustainedRuns.push(await coldLoad(big.base + verifyPath, auth, memKeys.slice(i, i + runSize), 50, seededKey(seed, 0), cpuPids));
    const sustained = sustainedRuns.length === 0 ? undefined : sustainedFigure(sustainedRuns);
    // Then at the target's rate: a run at saturation has its p50 set by the 50
    // connections (Little's law: 50 / rps), and a stall there slows the load
    // instead of making a queue. Paced, every stall of keyhold (or of the
    // database beside it, on its core) queues what arrives meanwhile.
    const pacedKeys = large.paced;
    h.log(`scale: miss path paced at ${PACED_RATE}/s: ${pacedKeys.length} more cold keys in ${PACED_RUNS} runs`);
    const pacedRuns: Figure[] = [];
    for (let i = 0; i < pacedKeys.length; i += PACED_KEYS)
      pacedRuns.push(await coldLoad(big.base + verifyPath, auth, pacedKeys.slice(i, i + PACED_KEYS), 50, seededKey(seed, 0), cpuPids, PACED_RATE));
    const paced = pacedRuns.length === 0 ? undefined : sustainedFigure(pacedRuns);
    await new Promise((r) => setTimeout(r, 1000));
    const verifiedFull = 1 + small.cold.length + large.cold.length + memKeys.length + pacedKeys.length;
    const fullRss = rssKb(big.child.pid);
    await stopK(big.child);
    h.log(`scale: memory: CACHE_MAX_ENTRIES=${BOUND}, verifying the same ${verifiedFull} keys`);
    const bounded = await start({ CACHE_MAX_ENTRIES: String(BOUND), CACHE_TTL_MS: "3600000" }, 0);
    const idleRss = rssKb(bounded.child.pid);
    // The same keys the full instance verified: the hot one, the cold sample, the rest.
    const boundedKeys = [seededKey(seed, 0), ...small.cold, ...large.cold, ...memKeys, ...pacedKeys];
    const boundedRun = await coldLoad(bounded.base + verifyPath, auth, boundedKeys, 50);
    await new Promise((r) => setTimeout(r, 1000));
    const boundedRss = rssKb(bounded.child.pid);
    await stopK(bounded.child);
    const memory = {
      keysInDatabase: inDb,
      full: { verifiedKeys: verifiedFull, cacheMaxEntries: Math.min(100_000_000, 2 * LARGE), rssMb: mb(fullRss) },
      bounded: { verifiedKeys: boundedKeys.length, valid: boundedRun.valid ?? 0, cacheMaxEntries: BOUND, idleRssMb: mb(idleRss), rssMb: mb(boundedRss) },
    };

    const f = (x: Figure) => `${x.rps.toFixed(0).padStart(6)} req/s  p50 ${String(x.p50).padStart(5)} ms  p99 ${String(x.p99).padStart(5)} ms`;
    const r = (x: number) => x.toFixed(2);
    const cpu = (x: Figure) =>
      x.cpuUsPerReq === undefined
        ? ""
        : `; CPU a verification: keyhold ${x.cpuUsPerReq.toFixed(0)} µs${x.storeCpuUsPerReq === undefined ? "" : `, stores ${x.storeCpuUsPerReq.toFixed(0)} µs`}` +
          (x.waitUsPerReq === undefined ? "" : `; keyhold waited for a CPU ${x.waitUsPerReq.toFixed(0)} µs`);
    const lines = [
      "",
      `scale (fresh database, ${os.cpus().length} CPUs):`,
      `  instances   one ${one.rps.toFixed(0)} req/s @50c, two ${twoRps.toFixed(0)} req/s (${twoA.rps.toFixed(0)} + ${twoB.rps.toFixed(0)}) @25c each: ${r(instances.ratio)}x` +
        `  -- on ${os.cpus().length} cores the instances, load generators and database share the CPUs: this measures the machine, not keyhold${redis}`,
      `  hit  ${String(SMALL).padStart(8)} keys ${f(small.hit)}`,
      `  hit  ${String(LARGE).padStart(8)} keys ${f(large.hit)}   ${r(growth.ratio.hitRps)}x rps, ${r(growth.ratio.hitP99)}x p99 of ${SMALL}`,
      `  miss ${String(SMALL).padStart(8)} keys ${f(small.miss)}   (${COLD} cold keys, valid ${small.miss.valid}${cpu(small.miss)})`,
      `  miss ${String(LARGE).padStart(8)} keys ${f(large.miss)}   ${r(growth.ratio.missRps)}x rps, ${r(growth.ratio.missP99)}x p99 of ${SMALL}  (valid ${large.miss.valid}${cpu(large.miss)})`,
      ...(sustained === undefined
        ? []
        : [
            `  miss ${String(LARGE).padStart(8)} keys ${f(sustained.median)}   sustained: median of ${sustainedRuns.length} runs of ${runSize} cold keys` +
              ` (req/s ${sustainedRuns.map((x) => x.rps.toFixed(0)).join(" / ")}; p99 ${sustainedRuns.map((x) => x.p99).join(" / ")} ms; valid ${sustained.median.valid} of ${memKeys.length}${cpu(sustained.median)})` +
              `  target ≥5,000/s, p99 < 20 ms ${sustained.median.rps >= 5_000 && sustained.median.p99 < 20 ? "met" : "MISSED"}`,
          ]),
      ...(paced === undefined
        ? []
        : [
            `  miss ${String(LARGE).padStart(8)} keys ${f(paced.median)}   paced at ${PACED_RATE}/s: median of ${pacedRuns.length} runs of ${PACED_KEYS} cold keys` +
              ` (p99 ${pacedRuns.map((x) => x.p99).join(" / ")} ms, from when each request was due; the generator late by ${pacedRuns.map((x) => x.sendLagP99).join(" / ")} ms at its p99${cpu(paced.median)})` +
              `  p99 < 20 ms at ${PACED_RATE}/s ${paced.median.p99 < 20 ? "met" : "MISSED"}`,
          ]),
      `  seeding     ${Math.round(smallRate)} keys/s (${SMALL}), ${Math.round(largeRate)} keys/s (up to ${LARGE})`,
      `  memory      ${inDb} keys in the database: RSS ${mb(fullRss).toFixed(0)} MB with ${verifiedFull} keys verified and cached;` +
        ` CACHE_MAX_ENTRIES=${BOUND}: RSS ${mb(boundedRss).toFixed(0)} MB after verifying ${boundedKeys.length} keys (${boundedRun.valid} valid; ${mb(idleRss).toFixed(0)} MB at start)`,
    ];
    return {
      scale: {
        database: "fresh",
        seconds: h.seconds,
        hitSeconds: HIT_SECONDS,
        coldKeys: COLD,
        instances,
        growth,
        sustained: { ...sustained, runs: sustainedRuns },
        paced: { rate: PACED_RATE, ...paced, runs: pacedRuns },
        memory,
      },
      lines,
    };
  } finally {
    for (const c of running) await h.stop(c);
    await db?.close();
    await database.drop();
  }
}

/** The median of each figure across runs (each median taken on its own: rps, p50 and p99 of different runs). */
function sustainedFigure(runs: Figure[]): { median: Figure } {
  return {
    median: {
      rps: median(runs.map((r) => r.rps)),
      p50: Number(median(runs.map((r) => r.p50)).toFixed(2)),
      p99: Number(median(runs.map((r) => r.p99)).toFixed(2)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
      valid: runs.reduce((a, r) => a + (r.valid ?? 0), 0),
      requests: runs.reduce((a, r) => a + (r.requests ?? 0), 0),
      ...medianOf(runs, "cpuUsPerReq"),
      ...medianOf(runs, "storeCpuUsPerReq"),
      ...medianOf(runs, "waitUsPerReq"),
    },
  };
}

/** { [field]: the median of the runs' values } when every run has the field, else {}. */
function medianOf(runs: Figure[], field: "cpuUsPerReq" | "storeCpuUsPerReq" | "waitUsPerReq"): Partial<Figure> {
  const values = runs.map((r) => r[field]);
  return values.every((v): v is number => v !== undefined) ? { [field]: median(values) } : {};
}

// biome-ignore lint/suspicious/noExplicitAny: a child process's JSON output, read field by field by the caller
function runJson(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "inherit"], env });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`${path.basename(args[0] ?? cmd)} exited with ${code}`));
      try {
        resolve(JSON.parse(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}
