// npm run bench:analytics: the analytics store at volume. BENCH_ANALYTICS_EVENTS
// verifications (10,000,000) spread over the last 30 days, 10 APIs of 200 keys
// each, are written through the recorder's own storage path (raw rows and the
// four roll-ups, one transaction a batch) into a fresh database on
// DATABASE_URL's server (or the private one `npm start` runs, with its default
// settings); then analytics.getVerifications answers, over HTTP as a user calls
// it, "verifications per day per key over 30 days for one API" from the per-day
// roll-up and from the raw table, BENCH_ANALYTICS_ROUNDS times each (5); the
// median is printed beside the seeding rate. BENCH_ANALYTICS_KEEP=1 keeps the
// database (its name is printed); BENCH_ANALYTICS_DATABASE=<that name> times the
// queries again on it without seeding (a change to the compiler, measured on the
// same rows).
import { execFileSync } from "node:child_process";
import path from "node:path";
import { type VerificationEvent, writeAnalytics } from "../src/storage/analytics.js";
import { migrate, openDatabase } from "../src/storage/db.js";
import { freshDatabase, log, median, post, root, startKeyhold, stop } from "./support.js";

const EVENTS = Number(process.env.BENCH_ANALYTICS_EVENTS ?? 10_000_000);
const ROUNDS = Number(process.env.BENCH_ANALYTICS_ROUNDS ?? 5);
const APIS = 10;
const KEYS_PER_API = 200;
const BATCH = 4_000;
const DAYS = 30;
const OUTCOMES = ["VALID", "VALID", "VALID", "VALID", "VALID", "VALID", "VALID", "VALID", "RATE_LIMITED", "USAGE_EXCEEDED"];
const TAG_SETS = [[], ["path=/v1/a"], ["path=/v1/b"], ["path=/v1/a", "plan=pro"], ["path=/v1/c", "plan=free"]];

/** A small deterministic generator (mulberry32), so two runs seed the same rows. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function cli(args: string[], env: Record<string, string>): Record<string, unknown> {
  const out = execFileSync(process.execPath, [path.join(root, "bin", "keyhold.js"), ...args], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(out.toString()) as Record<string, unknown>;
}

async function main(): Promise<void> {
  const reuse = process.env.BENCH_ANALYTICS_DATABASE;
  const database = await freshDatabase("keyhold_bench_analytics", reuse);
  const url = database.url;
  const db = await openDatabase(url);
  await migrate(db.pool, () => undefined);
  const k = await startKeyhold({ DATABASE_URL: url });
  try {
    // One workspace name, so that a kept database's rows are read by a new root key of the same workspace.
    const workspace = "bench_analytics";
    const { rootKey } = cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api,apis.*.read_analytics"], {
      DATABASE_URL: url,
    }) as { rootKey: string };
    const apis: Array<{ apiId: string; keySpaceId: string }> = [];
    if (reuse === undefined) {
      for (let i = 0; i < APIS; i++) await post(k.base, "apis.createApi", { name: `analytics-${i}` }, rootKey);
    }
    const [rs] = await db.pool.query(
      "SELECT a.id, a.key_auth_id, a.workspace_id FROM apis a JOIN workspaces w ON w.id = a.workspace_id WHERE w.name = ? ORDER BY a.created_at_m, a.id",
      [workspace],
    );
    for (const r of rs as Array<{ id: string; key_auth_id: string }>) apis.push({ apiId: r.id, keySpaceId: r.key_auth_id });
    if (apis.length !== APIS) throw new Error(`expected ${APIS} APIs in ${workspace}, found ${apis.length}`);
    const workspaceId = (rs as Array<{ workspace_id: string }>)[0]?.workspace_id as string;

    let seedSeconds = 0;
    if (reuse === undefined) seedSeconds = await seed();
    else log(`reusing ${database.name}: no seeding`);

    async function seed(): Promise<number> {
      log(`seeding ${EVENTS.toLocaleString("en")} verifications over ${DAYS} days (${APIS} APIs x ${KEYS_PER_API} keys), ${BATCH} a transaction`);
      const random = rng(42);
      // From the start of the day 29 days ago until now: 30 calendar days, all inside
      // "time >= now() - INTERVAL 30 DAY", so the roll-up's whole days and the raw
      // rows cover the same events. In time order, as the recorder writes them.
      const end = Date.now();
      const start = end - (end % 86_400_000) - (DAYS - 1) * 86_400_000;
      const began = process.hrtime.bigint();
      let written = 0;
      let lastLog = Date.now();
      // Two batches in flight at a time (two connections), as two instances' recorders would write.
      let inFlight: Promise<void> = Promise.resolve();
      while (written < EVENTS) {
        const n = Math.min(BATCH, EVENTS - written);
        const batch: VerificationEvent[] = [];
        for (let i = 0; i < n; i++) {
          const a = Math.floor(random() * APIS);
          const api = apis[a] as (typeof apis)[number];
          const keyNo = Math.floor(random() * KEYS_PER_API);
          const identity = keyNo % 2 === 0 ? `id_bench_${a}_${keyNo}` : "";
          const outcome = OUTCOMES[Math.floor(random() * OUTCOMES.length)] as string;
          batch.push({
            requestId: `req_bench_${written + i}`,
            time: Math.floor(start + ((written + i + random()) / EVENTS) * (end - start)),
            workspaceId,
            keySpaceId: api.keySpaceId,
            apiId: api.apiId,
            keyId: `key_bench_${a}_${keyNo}`,
            identityId: identity,
            externalId: identity === "" ? "" : `user_${a}_${keyNo}`,
            outcome,
            region: "local",
            tags: TAG_SETS[Math.floor(random() * TAG_SETS.length)] as string[],
            spentCredits: outcome === "VALID" ? 1 : 0,
          });
        }
        const previous = inFlight;
        inFlight = writeAnalytics(db.pool, batch, []);
        await previous;
        written += n;
        if (Date.now() - lastLog > 15_000) {
          lastLog = Date.now();
          const s = Number(process.hrtime.bigint() - began) / 1e9;
          log(`  ${written.toLocaleString("en")} written, ${Math.round(written / s).toLocaleString("en")} events/s`);
        }
      }
      await inFlight;
      return Number(process.hrtime.bigint() - began) / 1e9;
    }
    const [sizes] = await db.pool.query(
      "SELECT table_name AS t, table_rows AS n, ROUND((data_length + index_length) / 1048576) AS mb FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'analytics_verifications%' ORDER BY table_name",
    );
    if (seedSeconds > 0) log(`seeded in ${seedSeconds.toFixed(0)} s: ${Math.round(EVENTS / seedSeconds).toLocaleString("en")} events/s`);

    const one = apis[0] as (typeof apis)[number];
    const queries = {
      perDayRollup: `SELECT toStartOfDay(time) AS day, key_id, sum(count) AS verifications FROM key_verifications_per_day_v1 WHERE key_space_id = '${one.keySpaceId}' AND time >= now() - INTERVAL 30 DAY GROUP BY day, key_id ORDER BY day, key_id`,
      rawTable: `SELECT toStartOfDay(time) AS day, key_id, count() AS verifications FROM key_verifications_v1 WHERE key_space_id = '${one.keySpaceId}' AND time >= now() - INTERVAL 30 DAY GROUP BY day, key_id ORDER BY day, key_id`,
    };
    const results: Record<string, { ms: number[]; rows: number; total: number }> = {};
    for (const [name, query] of Object.entries(queries)) {
      const ms: number[] = [];
      let rows: Array<Record<string, unknown>> = [];
      for (let r = 0; r < ROUNDS; r++) {
        const t = process.hrtime.bigint();
        const res = await fetch(`${k.base}/v2/analytics.getVerifications`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
          body: JSON.stringify({ query }),
        });
        const body = (await res.json()) as { data?: Array<Record<string, unknown>>; error?: unknown };
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (res.status !== 200 || body.data === undefined) throw new Error(`${name}: ${res.status} ${JSON.stringify(body.error)}`);
        rows = body.data;
      }
      results[name] = { ms, rows: rows.length, total: rows.reduce((n, x) => n + Number(x.verifications), 0) };
      log(`${name}: median ${median(ms).toFixed(0)} ms (${ms.map((x) => x.toFixed(0)).join(", ")}), ${rows.length} rows`);
    }
    const perDay = results.perDayRollup as (typeof results)[string];
    const raw = results.rawTable as (typeof results)[string];
    if (perDay.total !== raw.total) throw new Error(`the roll-up and the raw table disagree: ${perDay.total} vs ${raw.total}`);
    console.log("");
    if (seedSeconds > 0)
      console.log(
        `events          ${EVENTS.toLocaleString("en")} seeded in ${seedSeconds.toFixed(0)} s: ${Math.round(EVENTS / seedSeconds).toLocaleString("en")} events/s`,
      );
    console.log(`per-day roll-up median ${median(perDay.ms).toFixed(0)} ms over ${ROUNDS} rounds, ${perDay.rows} rows (target < 1,000 ms)`);
    console.log(
      `raw table       median ${median(raw.ms).toFixed(0)} ms over ${ROUNDS} rounds, ${raw.rows} rows; the same ${raw.total.toLocaleString("en")} verifications`,
    );
    console.log(JSON.stringify({ date: new Date().toISOString(), events: EVENTS, seedSeconds, results, sizes }));
  } finally {
    await stop(k.child);
    await db.close();
    await database.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
