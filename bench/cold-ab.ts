// The miss path of builds side by side: `npm run bench:cold-ab -- <checkout> [<checkout>…]`
// measures each checkout named, then this one (each with its dist/ built, as
// for bench:ab), on cold verifications: keys verified for the first time, each
// once, 50 at a time, among COLD_AB_SEEDED (1,000,000) keys seeded once into a
// fresh database on a private server (or DATABASE_URL's).
//
// Each round starts every build in turn on CPU 0 (a fresh instance, its cache
// empty and large enough for every key), the order flipped every round, for
// COLD_AB_ROUNDS (2) rounds; each instance serves COLD_AB_RUNS (2) timed runs
// of COLD_AB_RUN_KEYS (50,000) keys never verified before, from cold-load.js on
// CPU 1 after its warm-up. Beside req/s, p50 and p99 (the generator's), each
// run prints keyhold's CPU and the database's a verification (from /proc), how
// long keyhold's main thread waited for a CPU while runnable (the database's
// threads on its core: /proc/<pid>/task/<pid>/schedstat), and
// what keyhold's own /metrics saw over its timed part (scraped by cold-load.js
// just before and after it): how late its event loop was (p99 and max; from
// prom-client's monitor, reset by each scrape, less the monitor's 10 ms
// interval, EVENT_LOOP_MONITOR_MS in src/transport/metrics.ts; printed
// as it is, 10 ms high, before 2026-12-02), the mean
// latency of its database statements (all of them: lookups and analytics
// writes), and garbage collection's time and scavenges (every collection; a
// build before keyhold served its own GC histogram, src/transport/metrics.ts,
// counts only the first of each batch Node reports together, a lower bound;
// `--trace-gc` counts them all: COLD_AB_NODE_FLAGS).
// The timed part of `npm run bench`'s scale part is the same path
// (bench/scale.ts, "sustained"); this runs builds against each other minutes
// apart instead of one build once.
// COLD_AB_NODE_FLAGS: Node.js flags for every build (`--trace-gc`, say).
// COLD_AB_CACHE_ENTRIES: each instance's CACHE_MAX_ENTRIES (default twice the
// keys seeded, so that the cache never evicts); with COLD_AB_FILL, that many
// cold keys verified on each fresh instance before its timed runs, untimed, so
// that a cache smaller than the fill is full when they start and every cold
// key they take evicts one: the steady state of a deployment whose cache is
// full and keeps taking keys it has not seen (bench/README.md, "A full cache's
// tables rebuilt in one piece"). p99.9 and the slowest answer of each run are
// printed beside its p99, for the stalls a full cache's churn may add.
// COLD_AB_RATE: each run paced at this many verifications a second instead of
// as fast as 50 connections go (cold-load.ts, COLD_LOAD_RATE): the latency at
// a given load rather than at saturation; its runs also print sendLagP99.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../src/storage/db.js";
import { EVENT_LOOP_MONITOR_MS } from "../src/transport/metrics.js";
import { seededKey, seedKeys } from "./seed-keys.js";
import { createRootKey, freshDatabase, here, localDatabasePid, log, median, pinned, post, root, startKeyhold, stop } from "./support.js";

/** A positive whole number from the environment, or `def`; anything else stops the run before the seeding. */
const count = (name: string, def: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a whole number of at least 1, not ${JSON.stringify(raw)}`);
  return n;
};

// An argument may carry Node.js flags for its build alone after the path, space
// separated ("/work/x --no-memory-reducer"), and one checkout may be named more
// than once, so that the same build runs with and without a flag.
const builds = [...process.argv.slice(2), root].map((arg, i) => {
  const [dir = "", ...flags] = i === process.argv.length - 2 ? [arg] : arg.split(" ").filter((w) => w !== "");
  return { dir: path.resolve(dir), flags, label: [path.resolve(dir), ...flags].join(" ") };
});
const checkouts = builds.map((b) => b.dir);
if (process.argv.length < 3) {
  process.stderr.write("usage: npm run bench:cold-ab -- <checkout> [<checkout>…]  (each with dist/ built)\n");
  process.exit(2);
}
for (const c of checkouts)
  if (!fs.existsSync(path.join(c, "dist", "src", "main.js"))) throw new Error(`${c} has no dist/src/main.js: build it first (npx tsc -p tsconfig.build.json)`);

const KEYS = count("COLD_AB_SEEDED", 1_000_000);
const ROUNDS = count("COLD_AB_ROUNDS", 2);
const RUNS = count("COLD_AB_RUNS", 2);
const RUN = count("COLD_AB_RUN_KEYS", 50_000);
const RATE = process.env.COLD_AB_RATE === undefined || process.env.COLD_AB_RATE === "" ? undefined : count("COLD_AB_RATE", 1);
const nodeFlags = (process.env.COLD_AB_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "");
const CACHE_ENTRIES = count("COLD_AB_CACHE_ENTRIES", 2 * KEYS);
const FILL = process.env.COLD_AB_FILL === undefined || process.env.COLD_AB_FILL === "" || process.env.COLD_AB_FILL === "0" ? 0 : count("COLD_AB_FILL", 1);
if (checkouts.length * ROUNDS * (FILL + RUNS * RUN) > KEYS - 1)
  throw new Error(`${KEYS} keys are too few for ${checkouts.length} builds x ${ROUNDS} rounds x (${FILL} filling + ${RUNS} runs x ${RUN})`);

interface Run {
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  /** The slowest answer of the run, ms. */
  max: number;
  cpuUs: number;
  dbUs: number;
  /** How long keyhold's main thread waited, runnable, for a CPU, µs a verification (another process on its core). */
  waitUs: number;
  /** How late the event loop was at its p99 over the run, ms (the monitor's interval taken off). */
  lateP99Ms: number;
  lateMaxMs: number;
  gcMs: number;
  scavenges: number;
  statementMs: number;
  valid: number;
  /** Paced runs (COLD_LOAD_RATE) only: how late the generator sent at its p99, ms (part of every latency). */
  sendLagP99?: number;
}

/** What a run's figures are made from, read off keyhold's /metrics text. */
function figures(text: string): { lagP99: number; lagMax: number; gcSeconds: number; scavenges: number; stmtSum: number; stmtCount: number } {
  const one = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  const sum = (re: RegExp) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
  return {
    lagP99: one(/^keyhold_nodejs_eventloop_lag_p99_seconds (\S+)/m),
    lagMax: one(/^keyhold_nodejs_eventloop_lag_max_seconds (\S+)/m),
    gcSeconds: sum(/^keyhold_nodejs_gc_duration_seconds_sum\{kind="\w+"\} (\S+)/gm),
    scavenges: one(/^keyhold_nodejs_gc_duration_seconds_count\{kind="minor"\} (\S+)/m) || 0,
    stmtSum: one(/^keyhold_db_statement_duration_seconds_sum\{outcome="ok"\} (\S+)/m),
    stmtCount: one(/^keyhold_db_statement_duration_seconds_count\{outcome="ok"\} (\S+)/m),
  };
}

const database = await freshDatabase("keyhold_bench_cold_ab");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-cold-ab-"));
try {
  const url = database.url;
  log(`cold-ab: ${checkouts.length} builds, database ${database.name}`);
  // keyhold creates and migrates the database as it starts; the root key is made after.
  const setup = await startKeyhold({ DATABASE_URL: url }, null);
  let rk: string;
  let created: Record<string, unknown>;
  try {
    rk = createRootKey(url, `cold_ab_${Date.now()}`);
    const apiId = (await post(setup.base, "apis.createApi", { name: "cold-ab" }, rk)).apiId as string;
    created = await post(setup.base, "keys.createKey", { apiId, prefix: "bench" }, rk);
  } finally {
    // Stopped whether or not the setup succeeded.
    await stop(setup.child);
  }
  const db = await openDatabase(url);
  const seed = `cold-ab:${Math.random()}`;
  try {
    const [rows] = await db.pool.query("SELECT key_auth_id, api_id, workspace_id FROM `keys` WHERE id = ?", [created.keyId]);
    const o = (rows as Array<{ key_auth_id: string; api_id: string; workspace_id: string }>)[0];
    if (o === undefined) throw new Error("cannot read back the key created through the API");
    await seedKeys(db.pool, { keyAuthId: o.key_auth_id, apiId: o.api_id, workspaceId: o.workspace_id }, seed, 0, KEYS);
  } finally {
    await db.close();
  }
  const dbPid = await localDatabasePid(url);
  // Keys 1.. in a random order, each verified by one run only; key 0 is the warm-up's hot key.
  const order = Int32Array.from({ length: KEYS - 1 }, (_, i) => i + 1);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    const t = order[i] as number;
    order[i] = order[j] as number;
    order[j] = t;
  }
  let taken = 0;
  const warmKey = seededKey(seed, 0);
  const auth = `Bearer ${rk}`;
  const results: Run[][] = checkouts.map(() => []);
  /** The next `n` keys of the order, never verified before, written one a line to `name` for cold-load.js. */
  const nextKeys = (name: string, n: number): string => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, `${Array.from(order.subarray(taken, taken + n), (x) => seededKey(seed, x)).join("\n")}\n`);
    taken += n;
    return file;
  };
  for (let r = 0; r < ROUNDS; r++) {
    const turn = checkouts.map((_, i) => (r % 2 === 0 ? i : checkouts.length - 1 - i));
    for (const b of turn) {
      const checkout = checkouts[b] as string;
      const label = builds[b]?.label ?? checkout;
      // When the instance was started: each run's log line says when it ran, in seconds from here, to set it beside
      // the instance's own clock (`--trace-gc` counts milliseconds from its start, ~0.1-0.3 s after this).
      const startedAt = performance.now();
      const k = await startKeyhold(
        { DATABASE_URL: url, CACHE_MAX_ENTRIES: String(CACHE_ENTRIES), CACHE_MAX_BYTES: String(16 * 1024 ** 3), CACHE_TTL_MS: "3600000" },
        0,
        [...nodeFlags, ...(builds[b]?.flags ?? [])],
        checkout,
      );
      try {
        await post(k.base, "keys.verifyKey", { key: warmKey }, rk);
        // The fill: cold keys through the same generator, its figures left aside, in pieces of at most a run's size.
        for (let filled = 0; filled < FILL; ) {
          const n = Math.min(RUN, FILL - filled);
          const file = nextKeys("fill.txt", n);
          filled += n;
          const [cmd, args] = pinned(1, process.execPath, [path.join(here, "cold-load.js"), `${k.base}/v2/keys.verifyKey`, auth, file, "50"]);
          const out = JSON.parse(execFileSync(cmd, args, { env: { ...process.env, COLD_LOAD_RATE: "" } }).toString()) as { valid: number };
          if (out.valid !== n) throw new Error(`${label}: ${out.valid} of ${n} cold keys verified valid while filling its cache`);
          if (filled === FILL || filled % (10 * RUN) === 0) log(`round ${r + 1}, ${label}: ${filled} of ${FILL} cold keys verified to fill its cache`);
        }
        for (let i = 0; i < RUNS; i++) {
          const file = nextKeys("keys.txt", RUN);
          const [cmd, args] = pinned(1, process.execPath, [path.join(here, "cold-load.js"), `${k.base}/v2/keys.verifyKey`, auth, file, "50", warmKey, "3000"]);
          const runFrom = (performance.now() - startedAt) / 1000;
          const metricsOut = path.join(tmp, "metrics");
          const out = JSON.parse(
            execFileSync(cmd, args, {
              env: {
                ...process.env,
                COLD_LOAD_PIDS: [k.child.pid, dbPid].filter((p) => p !== undefined).join(","),
                COLD_LOAD_METRICS: `${k.base}/metrics`,
                COLD_LOAD_METRICS_OUT: metricsOut,
                COLD_LOAD_RATE: RATE === undefined ? "" : String(RATE),
              },
            }).toString(),
          ) as {
            rps: number;
            p50: number;
            p99: number;
            p999: number;
            max: number;
            cpuUsPerReq?: number;
            storeCpuUsPerReq?: number;
            waitUsPerReq?: number;
            valid: number;
            sendLagP99?: number;
          };
          const before = figures(fs.readFileSync(`${metricsOut}.before`, "utf8"));
          const after = figures(fs.readFileSync(`${metricsOut}.after`, "utf8"));
          const run: Run = {
            rps: Math.round(out.rps),
            p50: out.p50,
            p99: out.p99,
            p999: out.p999,
            max: out.max,
            cpuUs: Math.round(out.cpuUsPerReq ?? Number.NaN),
            dbUs: Math.round(out.storeCpuUsPerReq ?? Number.NaN),
            waitUs: Math.round(out.waitUsPerReq ?? Number.NaN),
            lateP99Ms: Number((after.lagP99 * 1000 - EVENT_LOOP_MONITOR_MS).toFixed(1)),
            lateMaxMs: Number((after.lagMax * 1000 - EVENT_LOOP_MONITOR_MS).toFixed(1)),
            gcMs: Math.round((after.gcSeconds - before.gcSeconds) * 1000),
            scavenges: after.scavenges - before.scavenges,
            statementMs: Number((((after.stmtSum - before.stmtSum) / Math.max(1, after.stmtCount - before.stmtCount)) * 1000).toFixed(2)),
            valid: out.valid,
            ...(out.sendLagP99 === undefined ? {} : { sendLagP99: out.sendLagP99 }),
          };
          if (run.valid !== RUN) throw new Error(`${label}: ${run.valid} of ${RUN} cold keys verified valid`);
          (results[b] as Run[]).push(run);
          const runTo = (performance.now() - startedAt) / 1000;
          log(`round ${r + 1}, ${label}, run ${i + 1} (${runFrom.toFixed(1)}-${runTo.toFixed(1)} s after the instance started): ${JSON.stringify(run)}`);
        }
      } finally {
        await stop(k.child);
      }
    }
  }
  const m = (xs: Run[], f: (x: Run) => number) => median(xs.map(f));
  // One row a build: the column's heading, its width and how a median is written.
  const columns: Array<[string, number, (xs: Run[]) => string]> = [
    ["req/s", 8, (xs) => String(m(xs, (x) => x.rps))],
    ["p50", 7, (xs) => m(xs, (x) => x.p50).toFixed(1)],
    ["p99", 7, (xs) => m(xs, (x) => x.p99).toFixed(1)],
    ["p99.9", 7, (xs) => m(xs, (x) => x.p999).toFixed(1)],
    ["max", 7, (xs) => m(xs, (x) => x.max).toFixed(1)],
    ["CPU µs", 8, (xs) => String(m(xs, (x) => x.cpuUs))],
    ["DB µs", 7, (xs) => String(m(xs, (x) => x.dbUs))],
    ["wait µs", 8, (xs) => String(m(xs, (x) => x.waitUs))],
    ["late99", 7, (xs) => m(xs, (x) => x.lateP99Ms).toFixed(1)],
    ["latemax", 8, (xs) => m(xs, (x) => x.lateMaxMs).toFixed(1)],
    ["GC ms", 7, (xs) => String(m(xs, (x) => x.gcMs))],
    ["stmt ms", 9, (xs) => m(xs, (x) => x.statementMs).toFixed(2)],
  ];
  process.stdout.write(`${"build".padEnd(36)}${columns.map(([h, w]) => h.padStart(w)).join("")}   p99 / max of each run\n`);
  builds.forEach(({ label }, b) => {
    const xs = results[b] as Run[];
    process.stdout.write(`${label.padEnd(36)}${columns.map(([, w, f]) => f(xs).padStart(w)).join("")}   ${xs.map((x) => `${x.p99}/${x.max}`).join(" ")}\n`);
  });
  process.stdout.write(
    "medians of every run of each build; CPU and DB µs a cold verification; wait = keyhold's main thread runnable but waiting for a CPU, µs a verification; late = how late keyhold's event loop was (ms, the monitor's 10 ms interval taken off)\n",
  );
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
  await database.drop();
}
