// npm run bench: measures keyhold against baselines run on this machine in the
// same run, and prints each figure as a ratio to its baseline:
//   A  a bare Fastify JSON route            (for the JSON endpoints)
//   B  a bare @grpc/grpc-js unary handler   (for verifyKey over gRPC, loaded by h2load)
// and, measured like a scenario against A, the floor (bench/floor-http.ts): a
// Fastify route doing only what a hot verifyKey cannot avoid. It is not keyhold;
// it splits verifyJson's distance to A into the stack's share and keyhold's own.
// Every server runs pinned to CPU 0 and every load generator to CPU 1 (when
// `taskset` exists). All servers stay up for the whole run; only one is loaded at
// a time. Each scenario is measured between two measurements of its baseline
// (before and after), in BENCH_ROUNDS rounds (3); the figure reported is the
// median over rounds of its ratio to the mean of the two baselines around it, so
// drift of the machine during a run lands in both sides of every ratio. Beside
// req/s, every measurement has the server's CPU per request (utime+stime from
// /proc over the window, divided by the answers): steadier than throughput on a
// shared machine. bench/results.json keeps every measurement of every round.
// BENCH_PROFILE=1 then profiles each scenario (`node --cpu-prof`) and writes the
// top self-time entries to bench/profiles/<scenario>.txt.
// Then the scale part (bench/scale.ts; BENCH_SCALE=0 skips it).
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { VerifyKeyRequestSchema, VerifyKeyResponseSchema } from "../gen/keyhold/v2/keys_service_pb.js";
import { autocannon, ensureH2load, type Figure, h2load, measured } from "./load.js";
import { formatSummary, summarizeProfile } from "./profile.js";
import { runScale } from "./scale.js";
import {
  bodiesFile,
  createRootKey,
  freshDatabase,
  hasTaskset,
  here,
  localDatabasePid,
  localRedisPid,
  log,
  manyKeysFile,
  median,
  pinned,
  post,
  root,
  startKeyhold,
  stop,
} from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const PROFILE = process.env.BENCH_PROFILE === "1";
const REDIS_URL = process.env.REDIS_URL ?? "";

interface Server {
  child: ChildProcess;
  pid: number;
}

function startProcess(script: string, env: Record<string, string> = {}): Promise<Server & { port: number }> {
  const [cmd, args] = pinned(0, process.execPath, [script]);
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout?.on("data", (d: Buffer) => {
      buf += d.toString();
      const line = buf.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve({ child, pid: child.pid as number, port: JSON.parse(line).port });
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

type Load = Parameters<typeof measured>[1];

interface Scenario {
  name: string;
  what: string;
  baseline: "A" | "B";
  server: () => Server;
  load: (seconds: number) => ReturnType<Load>;
  /** Targets of issue 14: median ratio to the baseline, server CPU ratio, or keys/s. */
  target: { ratio?: number; cpuRatio?: number; rps?: number };
  /** Not keyhold (the floor): measured and printed like a scenario, never profiled, no target. */
  reference?: true;
}

interface Measurement extends Figure {
  round: number;
  name: string;
  /** Set on scenarios: the baselines measured just before and just after. */
  ratio?: number;
  cpuRatio?: number;
  baselineRps?: number;
  baselineCpuUsPerReq?: number;
}

/** One gRPC call with grpc-js: h2load cannot see a gRPC status, so the bench checks the answer is VALID first. */
function grpcVerifyOnce(port: number, key: string, auth: string): Promise<boolean> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("authorization", auth);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/keyhold.v2.KeysService/VerifyKey",
      (m: Uint8Array) => Buffer.from(m),
      (b: Buffer) => fromBinary(VerifyKeyResponseSchema, b),
      toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key })),
      md,
      (err, res) => {
        client.close();
        resolve(err === null && res?.valid === true);
      },
    );
  });
}

async function main() {
  if (!ensureH2load()) {
    console.error("bench: gRPC is measured with h2load, which is missing. Install it with `apt-get install nghttp2-client` (Debian/Ubuntu) and run again.");
    process.exit(2);
  }
  log(
    `${ROUNDS} rounds of ${SECONDS}s per measurement, ${CONNECTIONS} connections${hasTaskset ? ", servers on CPU 0 and load on CPU 1" : " (taskset missing: nothing pinned)"}; gRPC load from h2load`,
  );

  const A = await startProcess(path.join(here, "baseline-http.js"));
  const B = await startProcess(path.join(here, "baseline-grpc.js"));
  // A fresh database (on DATABASE_URL's server or a private one) that every keyhold process of the run shares.
  const db = await freshDatabase("keyhold_bench");
  const DATABASE_URL = db.url;
  // The local instance keeps its rate limits in process; a second one shares them through Redis when REDIS_URL is set.
  let k = await startKeyhold({ DATABASE_URL, REDIS_URL: "" });
  let kr = REDIS_URL === "" ? undefined : await startKeyhold({ DATABASE_URL, REDIS_URL });
  const servers: ChildProcess[] = [A.child, B.child];
  // The database's and Redis's processes when they run here: their CPU is read beside every figure's.
  const storePids = [await localDatabasePid(DATABASE_URL), REDIS_URL === "" ? undefined : await localRedisPid(REDIS_URL)].filter(
    (pid): pid is number => pid !== undefined,
  );
  log(
    storePids.length > 0
      ? `the stores' CPU is read from pid ${storePids.join(" and ")} (column "store µs")`
      : "the database and Redis do not run on this machine (or their pids are out of reach): no store CPU column",
  );
  const asServer = (x: { child: ChildProcess }): Server => ({ child: x.child, pid: x.child.pid as number });
  try {
    const rk = createRootKey(DATABASE_URL, `bench_${Date.now()}`);
    const auth = `Bearer ${rk}`;
    const apiId = (await post(k.base, "apis.createApi", { name: "bench" }, rk)).apiId as string;
    const BIG = 1_000_000_000;
    const plain = (await post(k.base, "keys.createKey", { apiId, prefix: "bench" }, rk)).key as string;
    const limited = (await post(k.base, "keys.createKey", { apiId, prefix: "bench", ratelimits: [{ name: "requests", limit: BIG, duration: 60_000 }] }, rk))
      .key as string;
    const credited = (await post(k.base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: BIG } }, rk)).key as string;
    // verifyCreditsMany: every request the next of 1,000 keys with credits (bench/many-bodies.ts).
    const creditedMany = await manyKeysFile(
      async () => (await post(k.base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: BIG } }, rk)).key as string,
    );
    await post(k.base, "identities.createIdentity", { externalId: "bench_user", ratelimits: [{ name: "shared", limit: BIG, duration: 60_000 }] }, rk);
    const linked = (await post(k.base, "keys.createKey", { apiId, prefix: "bench", externalId: "bench_user" }, rk)).key as string;
    const limitBody = JSON.stringify({ namespace: "bench", identifier: "user_1", limit: BIG, duration: 60_000 });
    if (!(await grpcVerifyOnce(k.grpcPort, plain, auth))) throw new Error("keyhold's gRPC door did not answer VALID for the bench key");
    const floor = await startProcess(path.join(here, "floor-http.js"), { ROOT_KEY: rk, KEY: plain });
    servers.push(floor.child);

    const json = (base: () => string, op: string, body: string) => (seconds: number) =>
      autocannon({ url: `${base()}/v2/${op}`, body, auth, connections: CONNECTIONS }, seconds);
    const kServer = () => asServer(k);
    const scenarios: Scenario[] = [
      {
        name: "floorJson",
        what: "the floor: a Fastify route doing only what a hot verifyKey cannot avoid (not keyhold)",
        baseline: "A",
        server: () => floor,
        load: json(() => `http://127.0.0.1:${floor.port}`, "keys.verifyKey", JSON.stringify({ key: plain })),
        target: {},
        reference: true,
      },
      {
        name: "verifyJson",
        what: "verifyKey, JSON, hot key without limits",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "keys.verifyKey", JSON.stringify({ key: plain })),
        target: { ratio: 0.8, cpuRatio: 1.25 },
      },
      {
        name: "verifyLimit",
        what: "verifyKey, JSON, hot key with one rate limit",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "keys.verifyKey", JSON.stringify({ key: limited })),
        target: { ratio: 0.7 },
      },
      {
        name: "verifyIdentity",
        what: "verifyKey, JSON, identity-linked key (shared limit)",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "keys.verifyKey", JSON.stringify({ key: linked })),
        target: { ratio: 0.7 },
      },
      {
        name: "ratelimitLimit",
        what: "ratelimit.limit",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "ratelimit.limit", limitBody),
        target: { ratio: 0.7 },
      },
      {
        name: "verifyCredits",
        what: "verifyKey, JSON, key with credits (exact)",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "keys.verifyKey", JSON.stringify({ key: credited })),
        target: { ratio: 0.6 },
      },
      {
        name: "verifyCreditsMany",
        what: "verifyKey, JSON, credits of 1,000 keys, every request the next key (exact)",
        baseline: "A",
        server: kServer,
        load: (seconds) => autocannon({ url: `${k.base}/v2/keys.verifyKey`, body: "", bodiesFile: creditedMany, auth, connections: CONNECTIONS }, seconds),
        target: { ratio: 0.6 },
      },
      {
        name: "createKey",
        what: "keys.createKey (keys/s)",
        baseline: "A",
        server: kServer,
        load: json(() => k.base, "keys.createKey", JSON.stringify({ apiId, prefix: "bench" })),
        target: { rps: 5000 },
      },
    ];
    if (kr !== undefined) {
      const krServer = () => asServer(kr as typeof k);
      const krBase = () => (kr as typeof k).base;
      scenarios.push(
        {
          name: "verifyLimitRedis",
          what: "verifyKey with one rate limit, REDIS_URL",
          baseline: "A",
          server: krServer,
          load: json(krBase, "keys.verifyKey", JSON.stringify({ key: limited })),
          target: { ratio: 0.5 },
        },
        {
          name: "ratelimitRedis",
          what: "ratelimit.limit, REDIS_URL",
          baseline: "A",
          server: krServer,
          load: json(krBase, "ratelimit.limit", limitBody),
          target: { ratio: 0.5 },
        },
      );
    }
    const grpcMessage = toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key: plain }));
    scenarios.push({
      name: "verifyGrpc",
      what: "verifyKey, gRPC (h2load), hot key without limits",
      baseline: "B",
      server: kServer,
      load: (s) => h2load({ port: k.grpcPort, path: "/keyhold.v2.KeysService/VerifyKey", message: grpcMessage, auth, connections: CONNECTIONS }, s),
      target: { ratio: 0.9 },
    });
    // BENCH_ONLY=verifyJson,verifyGrpc measures only those (a quick A/B while working on one path).
    const only = (process.env.BENCH_ONLY ?? "").split(",").filter(Boolean);
    if (only.length > 0) {
      const unknown = only.filter((n) => !scenarios.some((s) => s.name === n));
      if (unknown.length > 0) throw new Error(`BENCH_ONLY names unknown scenarios: ${unknown.join(", ")} (known: ${scenarios.map((s) => s.name).join(", ")})`);
      scenarios.splice(0, scenarios.length, ...scenarios.filter((s) => only.includes(s.name)));
    }
    const baselines: Record<"A" | "B", { what: string; server: Server; load: (s: number) => ReturnType<Load> }> = {
      A: {
        what: "bare Fastify 5 JSON route",
        server: A,
        load: (s) => autocannon({ url: `http://127.0.0.1:${A.port}/v2/baseline`, body: "{}", connections: CONNECTIONS }, s),
      },
      B: {
        what: "bare grpc-js unary handler (h2load)",
        server: B,
        load: (s) => h2load({ port: B.port, path: "/bench.Baseline/Ping", message: grpcMessage, connections: CONNECTIONS }, s),
      },
    };

    log("warming up every server and scenario (2 s each)");
    for (const b of ["A", "B"] as const) if (scenarios.some((x) => x.baseline === b)) baselines[b].load(2);
    for (const s of scenarios) s.load(2);

    const rounds: Measurement[] = [];
    const measure = (round: number, name: string, server: Server, load: (s: number) => ReturnType<Load>): Measurement => {
      const m = { round, name, ...measured(server.pid, () => load(SECONDS), storePids) };
      rounds.push(m);
      return m;
    };
    for (let round = 1; round <= ROUNDS; round++) {
      for (const which of ["A", "B"] as const) {
        if (!scenarios.some((x) => x.baseline === which)) continue;
        const base = baselines[which];
        let before = measure(round, `baseline${which}`, base.server, base.load);
        for (const s of scenarios.filter((x) => x.baseline === which)) {
          log(`round ${round}/${ROUNDS}: ${s.name}`);
          const m = measure(round, s.name, s.server(), s.load);
          const after = measure(round, `baseline${which}`, base.server, base.load);
          const rps = (before.rps + after.rps) / 2;
          const cpu = (before.cpuUsPerReq + after.cpuUsPerReq) / 2;
          Object.assign(m, { ratio: m.rps / rps, cpuRatio: m.cpuUsPerReq / cpu, baselineRps: rps, baselineCpuUsPerReq: cpu });
          before = after;
        }
      }
    }

    // Exactness under the same load: one key's credits, and one key's rate limit.
    log("exactness: credits and rate limits under 50 connections");
    const exact = async (base: string) => {
      const INITIAL = 1_000_000;
      const c = await post(base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: INITIAL } }, rk);
      const fixed = autocannon({ url: `${base}/v2/keys.verifyKey`, body: JSON.stringify({ key: c.key }), auth, connections: CONNECTIONS }, 0, 20_000);
      const spent = INITIAL - ((await post(base, "keys.getKey", { keyId: c.keyId }, rk)).credits as { remaining: number }).remaining;
      // The same spread over 50 keys, every request the next key: what all of them lost is what was answered.
      const many: Array<{ keyId: string; key: string }> = [];
      for (let i = 0; i < 50; i++)
        many.push((await post(base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: INITIAL } }, rk)) as { keyId: string; key: string });
      const manyFile = bodiesFile(many.map((m) => m.key));
      const spread = autocannon({ url: `${base}/v2/keys.verifyKey`, body: "", bodiesFile: manyFile, auth, connections: CONNECTIONS }, 0, 20_000);
      let spentMany = 0;
      for (const m of many) spentMany += INITIAL - ((await post(base, "keys.getKey", { keyId: m.keyId }, rk)).credits as { remaining: number }).remaining;
      const LIMIT = 1_000;
      const l = (await post(base, "keys.createKey", { apiId, prefix: "bench", ratelimits: [{ name: "exact", limit: LIMIT, duration: 3_600_000 }] }, rk))
        .key as string;
      const counted = await countValid(base, l, 5_000);
      return {
        credits: { requests: 20_000, answered: fixed.ok, spent, exact: spent === fixed.ok && fixed.ok === 20_000 },
        creditsMany: { keys: many.length, requests: 20_000, answered: spread.ok, spent: spentMany, exact: spentMany === spread.ok && spread.ok === 20_000 },
        ratelimit: {
          limit: LIMIT,
          requests: 5_000,
          valid: counted.valid,
          limited: counted.limited,
          exact: counted.valid === LIMIT && counted.limited === 5_000 - LIMIT,
        },
      };
    };
    const countValid = async (base: string, key: string, n: number) => {
      let valid = 0;
      let limited = 0;
      let next = 0;
      // Connections of its own, opened now: a kept-alive one idle through the measurements may be closed as it is reused.
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
      const body = JSON.stringify({ key });
      const verify = () =>
        new Promise<string>((resolve, reject) => {
          const req = http.request(
            `${base}/v2/keys.verifyKey`,
            { method: "POST", agent, headers: { "content-type": "application/json", authorization: auth } },
            (res) => {
              let text = "";
              res.setEncoding("utf8");
              res.on("data", (c: string) => (text += c));
              res.on("end", () => resolve((JSON.parse(text) as { data: { code: string } }).data.code));
            },
          );
          req.on("error", reject);
          req.end(body);
        });
      const worker = async () => {
        while (next++ < n) {
          const code = await verify();
          if (code === "VALID") valid++;
          else if (code === "RATE_LIMITED") limited++;
        }
      };
      try {
        await Promise.all(Array.from({ length: CONNECTIONS }, worker));
      } finally {
        agent.destroy();
      }
      return { valid, limited };
    };
    const exactness: Record<string, Awaited<ReturnType<typeof exact>>> = { local: await exact(k.base) };
    if (kr !== undefined) exactness.redis = await exact(kr.base);

    const summary: Record<string, Record<string, unknown>> = {};
    const storeCpu = (ms: Measurement[]) => (storePids.length > 0 ? { storeCpuUsPerReq: median(ms.map((m) => m.storeCpuUsPerReq ?? Number.NaN)) } : {});
    // The server's share of its core over the window: below ~95%, it waited for requests (the load generator, sharing
    // its core with the stores, did not keep up) and its req/s says less about its own cost than its CPU per request.
    const busy = (m: Measurement) => (m.cpuUsPerReq * m.rps) / 1e6;
    const waitUs = (ms: Measurement[]) => median(ms.map((m) => m.waitUsPerReq ?? Number.NaN));
    const storeCol = (x: unknown) => (storePids.length > 0 ? (typeof x === "number" ? x.toFixed(1) : "").padStart(9) : "");
    const pick = (name: string) => rounds.filter((m) => m.name === name);
    const used = (["A", "B"] as const).filter((b) => scenarios.some((x) => x.baseline === b));
    for (const b of used) {
      const ms = pick(`baseline${b}`);
      summary[`baseline${b}`] = {
        what: baselines[b].what,
        rps: median(ms.map((m) => m.rps)),
        cpuUsPerReq: median(ms.map((m) => m.cpuUsPerReq)),
        serverBusy: median(ms.map(busy)),
        waitUsPerReq: waitUs(ms),
        ...storeCpu(ms),
        p99: median(ms.map((m) => m.p99)),
        measurements: ms.length,
      };
    }
    for (const s of scenarios) {
      const ms = pick(s.name);
      const ratio = median(ms.map((m) => m.ratio as number));
      const cpuRatio = median(ms.map((m) => m.cpuRatio as number));
      const rps = median(ms.map((m) => m.rps));
      const met =
        (s.target.ratio === undefined || ratio >= s.target.ratio) &&
        (s.target.cpuRatio === undefined || cpuRatio <= s.target.cpuRatio) &&
        (s.target.rps === undefined || rps >= s.target.rps);
      summary[s.name] = {
        what: s.what,
        baseline: `baseline${s.baseline}`,
        rps,
        ratio,
        ratios: ms.map((m) => m.ratio),
        cpuUsPerReq: median(ms.map((m) => m.cpuUsPerReq)),
        baselineCpuUsPerReq: median(ms.map((m) => m.baselineCpuUsPerReq as number)),
        cpuRatio,
        serverBusy: median(ms.map(busy)),
        waitUsPerReq: waitUs(ms),
        ...storeCpu(ms),
        p99: median(ms.map((m) => m.p99)),
        errors: ms.reduce((n, m) => n + m.errors + m.non2xx, 0),
        target: s.target,
        ...(s.reference ? { reference: true } : { met }),
      };
    }
    const report = {
      date: new Date().toISOString(),
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      pinned: hasTaskset,
      redis: kr !== undefined,
      /** The database's and Redis's processes whose CPU is in storeCpuUsPerReq (none when they run elsewhere). */
      storePids,
      summary,
      exactness,
      measurements: rounds,
    };
    const file = path.join(root, "bench", "results.json");
    fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

    const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    console.log("");
    console.log(`medians of ${ROUNDS} rounds; each ratio is to the mean of its baseline measured just before and just after it`);
    console.log(
      `${"scenario".padEnd(17)}${"req/s".padStart(9)}${"ratio".padStart(7)}   ${"(rounds)".padEnd(16)}${"µs/req".padStart(8)}${"base µs".padStart(9)}${"CPU ×".padStart(7)}${"busy".padStart(6)}${"wait µs".padStart(8)}${storePids.length > 0 ? "store µs".padStart(9) : ""}${"p99 ms".padStart(8)}  target`,
    );
    for (const b of used) {
      const s = summary[`baseline${b}`] as {
        rps: number;
        cpuUsPerReq: number;
        serverBusy: number;
        waitUsPerReq: number;
        storeCpuUsPerReq?: number;
        p99: number;
        what: string;
      };
      console.log(
        `${`baseline${b}`.padEnd(17)}${n0(s.rps).padStart(9)}${"".padStart(7)}   ${"".padEnd(16)}${s.cpuUsPerReq.toFixed(1).padStart(8)}${"".padStart(9)}${"".padStart(7)}${pct(s.serverBusy).padStart(6)}${s.waitUsPerReq.toFixed(1).padStart(8)}${storeCol(s.storeCpuUsPerReq)}${(Math.round(s.p99 * 10) / 10).toString().padStart(8)}  ${s.what}`,
      );
    }
    for (const s of scenarios) {
      const r = summary[s.name] as {
        rps: number;
        ratio: number;
        ratios: number[];
        cpuUsPerReq: number;
        baselineCpuUsPerReq: number;
        cpuRatio: number;
        serverBusy: number;
        waitUsPerReq: number;
        storeCpuUsPerReq?: number;
        p99: number;
        errors: number;
        met: boolean;
      };
      const want = [
        s.target.ratio !== undefined ? `≥${pct(s.target.ratio)}` : "",
        s.target.cpuRatio !== undefined ? `CPU ≤${s.target.cpuRatio}×` : "",
        s.target.rps !== undefined ? `≥${n0(s.target.rps)}/s` : "",
      ]
        .filter(Boolean)
        .join(", ");
      console.log(
        `${s.name.padEnd(17)}${n0(r.rps).padStart(9)}${pct(r.ratio).padStart(7)}   ${r.ratios.map(pct).join(" ").padEnd(16)}${r.cpuUsPerReq.toFixed(1).padStart(8)}${r.baselineCpuUsPerReq.toFixed(1).padStart(9)}${r.cpuRatio.toFixed(2).padStart(7)}${pct(r.serverBusy).padStart(6)}${r.waitUsPerReq.toFixed(1).padStart(8)}${storeCol(r.storeCpuUsPerReq)}${(Math.round(r.p99 * 10) / 10).toString().padStart(8)}  ${s.reference ? "reference, not keyhold" : `${want} ${r.met ? "met" : "MISSED"}`}${r.errors ? `  (errors/non-2xx ${r.errors})` : ""}`,
      );
    }
    for (const [where, e] of Object.entries(exactness)) {
      console.log(
        `exactness (${where}): credits ${e.credits.spent} spent for ${e.credits.answered} answered: ${e.credits.exact ? "exact" : "NOT EXACT"}; over ${e.creditsMany.keys} keys ${e.creditsMany.spent} spent for ${e.creditsMany.answered} answered: ${e.creditsMany.exact ? "exact" : "NOT EXACT"}; rate limit ${e.ratelimit.limit}: ${e.ratelimit.valid} valid, ${e.ratelimit.limited} limited of ${e.ratelimit.requests}: ${e.ratelimit.exact ? "exact" : "NOT EXACT"}`,
      );
    }
    console.log("every measurement is in bench/results.json");

    if (PROFILE) {
      // One keyhold process per scenario under --cpu-prof; the data stays in the database, so the same keys work.
      const dir = path.join(root, "bench", "profiles");
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir, { recursive: true });
      await stop(k.child);
      if (kr !== undefined) await stop(kr.child);
      for (const s of scenarios.filter((x) => !x.reference)) {
        const profDir = path.join(dir, `${s.name}.raw`);
        const env = { DATABASE_URL, REDIS_URL: s.name.endsWith("Redis") ? REDIS_URL : "" };
        const p = await startKeyhold(env, 0, ["--cpu-prof", `--cpu-prof-dir=${profDir}`]);
        if (s.name.endsWith("Redis")) kr = p;
        else k = p;
        s.load(2);
        s.load(SECONDS);
        await stop(p.child);
        const raw = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
        if (raw === undefined) throw new Error(`no profile written for ${s.name}`);
        fs.renameSync(path.join(profDir, raw), path.join(dir, `${s.name}.cpuprofile`));
        fs.rmSync(profDir, { recursive: true, force: true });
        const text = formatSummary(s.name, summarizeProfile(path.join(dir, `${s.name}.cpuprofile`), SECONDS));
        fs.writeFileSync(path.join(dir, `${s.name}.txt`), `${text}\n`);
        console.log(text);
      }
      console.log("profiles in bench/profiles/ (<scenario>.cpuprofile opens in Chrome DevTools; <scenario>.txt is the summary above)");
    }
  } finally {
    await stop(k.child);
    if (kr !== undefined) await stop(kr.child);
    for (const c of servers) await stop(c);
    await db.drop();
  }

  if (process.env.BENCH_SCALE === "0") return;
  const { scale, lines } = await runScale({ root, here, seconds: SECONDS, hasTaskset, log, startKeyhold, stop, post });
  const file = path.join(root, "bench", "results.json");
  const report = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  fs.writeFileSync(file, `${JSON.stringify({ ...report, scale }, null, 2)}\n`);
  for (const line of lines) console.log(line);
  console.log("scale figures added to bench/results.json");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
