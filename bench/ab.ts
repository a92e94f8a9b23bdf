// Builds of keyhold side by side: `npm run bench:ab -- <checkout> [<checkout>…]`
// measures each checkout named, then this one (each with its dist/ built, e.g. a
// `git worktree` of the commit before a change and `npx tsc -p tsconfig.build.json`).
//
// Every build runs at once on CPU 0, on one fresh database; each is loaded in
// turn from CPU 1 (autocannon, 50 connections) for BENCH_SECONDS (2), the order
// flipped every round, for BENCH_ROUNDS (12) rounds. Printed: each build's
// medians (req/s, its CPU a request, the stores' CPU a request) and, for every
// build after the first named, the median of each round's ratio to it. Two
// builds measured minutes apart in `npm run bench` differ by more than a change
// of a few per cent does on a shared machine (bench/README.md); measured
// seconds apart, round by round, they do not drift apart.
//
// BENCH_AB_SCENARIO picks the request: verifyJson (a hot key without limits,
// the default), verifyLimit, verifyCredits, verifyCreditsMany (every request the
// next of 1,000 keys with credits), ratelimitLimit, createKey (a plain
// key, one of the API's prefix) or verifyGrpc (verifyJson's key over gRPC,
// loaded with h2load). The builds share the database, so their
// migrations must agree. BENCH_AB_REDIS_URL (say redis://127.0.0.1:6379) runs
// every build with it as REDIS_URL (rate limits counted in Redis; its CPU is in
// the stores' column when it runs here); without it, none uses Redis.
//
// BENCH_AB_INSTRUCTIONS=1 counts instead of timing: every build runs under
// valgrind's callgrind (Debian's valgrind), and each round sends each build
// exactly BENCH_AB_REQUESTS (3,000) requests between a zeroing of its counts and
// a dump of them, then reads the instructions its main thread executed, a
// request. A count does not drift with the machine's load or clock (it may run
// beside other work), where a change of 1-2% of CPU is lost in autocannon's
// rounds. It leaves out the kernel (socket writes) and the threads beside the
// main one (TurboFan's compiles, parallel GC); a cache miss weighs as much as
// any instruction; and work done on a timer rather than a request (analytics
// flushes) is spread over ~30x fewer requests, valgrind serving some 500 a
// second. A round is only ever made larger by what disturbs it (a deoptimised
// function run in baseline code until it is optimised again, a major GC), so a
// build's figure is its fewest; 9 rounds (BENCH_ROUNDS) after 60,000 uncounted
// requests of warm-up take ~4.5 minutes for two builds. Its resolution on
// 2026-11-30: the same build's fewest in two runs 142.1 and 142.3 thousand
// instructions a verifyKey, while single rounds ranged over 140-258 thousand.
//
// BENCH_AB_KEEP=<dir> (with BENCH_AB_INSTRUCTIONS=1) keeps, for every build, the
// dump of its fewest round and V8's map of its compiled code (the builds run
// with `node --perf-basic-prof`, which writes /tmp/perf-<pid>.map as it
// compiles), so that `npm run bench:where -- <dir>` names where the
// instructions of a request went, function by function, the JavaScript that
// V8 compiled included (callgrind alone calls it `???:0x…`).
//
// BENCH_AB_TOGETHER=1 loads every build at once instead, each from its own load
// generator on CPU 1, so that the builds share CPU 0 through the same seconds:
// a slow phase of the machine (on 2026-11-30 the bare route's CPU a request
// doubled for a round, then came back) lands on all of them alike. Each build's
// CPU a request is read over its own load; the stores' column is left out,
// since their CPU cannot be split between the builds. On that machine, the
// same two builds of the gRPC door (bench/README.md): loaded in turn, CPU a
// call ×0.80-1.27 round to round; together, ×0.90-1.06.
import { type ChildProcess, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { VerifyKeyRequestSchema } from "../gen/keyhold/v2/keys_service_pb.js";
import { autocannon, autocannonAsync, ensureH2load, type Figure, h2load, h2loadAsync, measured, measuredAsync } from "./load.js";
import { createRootKey, freshDatabase, localDatabasePid, localRedisPid, log, manyKeysFile, median, post, root, startKeyhold, stop } from "./support.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const SCENARIO = process.env.BENCH_AB_SCENARIO ?? "verifyJson";
const REDIS_URL = process.env.BENCH_AB_REDIS_URL ?? "";
const CONNECTIONS = 50;
const TOGETHER = process.env.BENCH_AB_TOGETHER === "1";
const INSTRUCTIONS = process.env.BENCH_AB_INSTRUCTIONS === "1";
const REQUESTS = Number(process.env.BENCH_AB_REQUESTS ?? 3_000);
const WARM_UP_REQUESTS = 60_000;
const KEEP = process.env.BENCH_AB_KEEP ?? "";

/** callgrind_control's command to a build under callgrind (-z zero, -i on/off, -d dump). */
const callgrind = (pid: number, ...command: string[]): void => {
  execFileSync("callgrind_control", [...command, String(pid)], { stdio: "ignore" });
};

/**
 * The instructions of the main thread in a build's last dump: with
 * --separate-threads each thread's counts go to `<file>.<dump>-<thread>`, the
 * main thread being 01.
 */
function mainThreadInstructions(dir: string, pid: number): { file: string; instructions: number } {
  const dumps = fs
    .readdirSync(dir)
    .map((f) => /^cg\.(\d+)\.(\d+)-01$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) === pid)
    .sort((a, b) => Number(b[2]) - Number(a[2]));
  const last = dumps[0];
  if (last === undefined) throw new Error(`no callgrind dump of ${pid} in ${dir}`);
  const totals = /^totals: (\d+)/m.exec(fs.readFileSync(path.join(dir, last[0]), "utf8"));
  if (totals === null) throw new Error(`no totals in ${last[0]}`);
  return { file: path.join(dir, last[0]), instructions: Number(totals[1]) };
}
const SCENARIOS = ["verifyJson", "verifyLimit", "verifyIdentity", "verifyCredits", "verifyCreditsMany", "ratelimitLimit", "createKey", "verifyGrpc"];

/**
 * Whether a build counts its rate limits in Redis now: one that cannot reach it
 * answers from local counters (200s all the same) and says "redis" among the
 * degraded parts of /v2/liveness. Waits up to `waitMs` for it to come up.
 */
async function redisUp(base: string, waitMs: number): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    const res = (await (await fetch(`${base}/v2/liveness`)).json()) as { data?: { degraded?: string[] } };
    if (!(res.data?.degraded ?? []).includes("redis")) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * BENCH_AB_KEEP: each build's fewest round (`<n>.callgrind`), its code map
 * (`<n>.perf.map`) and `builds.json` naming them, for bench/where.ts.
 */
function keep(dir: string, builds: ReadonlyArray<{ checkout: string; pid: number; instructions: number[]; dumps: string[] }>): void {
  fs.mkdirSync(dir, { recursive: true });
  const kept = builds.map((b, i) => {
    const name = `${i + 1}-${path.basename(b.checkout)}`;
    const fewest = Math.min(...b.instructions);
    const round = b.instructions.indexOf(fewest);
    fs.copyFileSync(b.dumps[round] as string, path.join(dir, `${name}.callgrind`));
    fs.copyFileSync(`/tmp/perf-${b.pid}.map`, path.join(dir, `${name}.perf.map`));
    return { name, checkout: b.checkout, scenario: SCENARIO, requests: REQUESTS, instructionsPerRequest: Math.round(fewest) };
  });
  fs.writeFileSync(path.join(dir, "builds.json"), `${JSON.stringify(kept, null, 2)}\n`);
  console.log(`kept in ${dir}: each build's fewest round and its code map; \`npm run bench:where -- ${dir}\` names where they went`);
}

async function main() {
  const checkouts = [...process.argv.slice(2).map((d) => path.resolve(d)), root];
  if (checkouts.length < 2 || !SCENARIOS.includes(SCENARIO)) {
    console.error(`usage: npm run bench:ab -- <checkout> [<checkout>…]   (BENCH_AB_SCENARIO: ${SCENARIOS.join(", ")})`);
    process.exit(2);
  }
  if (SCENARIO === "verifyGrpc" && !ensureH2load()) {
    console.error("verifyGrpc needs h2load: apt-get install nghttp2-client");
    process.exit(2);
  }
  if (KEEP !== "" && !INSTRUCTIONS) {
    console.error("BENCH_AB_KEEP keeps what BENCH_AB_INSTRUCTIONS=1 counts: set both");
    process.exit(2);
  }
  if (INSTRUCTIONS && (TOGETHER || SCENARIO === "verifyGrpc")) {
    console.error("BENCH_AB_INSTRUCTIONS counts JSON scenarios loaded in turn (not verifyGrpc, not BENCH_AB_TOGETHER)");
    process.exit(2);
  }
  if (INSTRUCTIONS) {
    try {
      execFileSync("valgrind", ["--version"], { stdio: "ignore" });
    } catch {
      console.error("BENCH_AB_INSTRUCTIONS needs valgrind: apt-get install valgrind");
      process.exit(2);
    }
  }
  const cgDir = INSTRUCTIONS ? fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-ab-callgrind-")) : "";
  const launcher = INSTRUCTIONS
    ? ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", "--smc-check=all-non-file", `--callgrind-out-file=${cgDir}/cg.%p`]
    : [];
  const db = await freshDatabase("keyhold_bench_ab");
  const DATABASE_URL = db.url;
  const running: ChildProcess[] = [];
  try {
    // The first build migrates the database; the others find it done. Setup goes through the first.
    const builds: Array<{ checkout: string; base: string; grpcPort: number; pid: number; figures: Figure[]; instructions: number[]; dumps: string[] }> = [];
    for (const checkout of checkouts) {
      // Counted, a build logs no slow requests: under valgrind some take over a second
      // (SLOW_REQUEST_MS), and a round logged up to 50 such lines, work that no real request does.
      const env = INSTRUCTIONS ? { DATABASE_URL, REDIS_URL, LOG_LEVEL: "error" } : { DATABASE_URL, REDIS_URL };
      const k = await startKeyhold(env, 0, KEEP === "" ? [] : ["--perf-basic-prof"], checkout, launcher);
      running.push(k.child);
      if (REDIS_URL !== "" && !(await redisUp(k.base, 10_000))) throw new Error(`${checkout}: not using ${REDIS_URL} (degraded: redis)`);
      builds.push({ checkout, base: k.base, grpcPort: k.grpcPort, pid: k.child.pid as number, figures: [], instructions: [], dumps: [] });
    }
    const rk = createRootKey(DATABASE_URL, `bench_ab_${Date.now()}`);
    const first = builds[0] as (typeof builds)[number];
    const apiId = (await post(first.base, "apis.createApi", { name: "bench-ab" }, rk)).apiId as string;
    const BIG = 1_000_000_000;
    const keyOf = async (fields: Record<string, unknown>) =>
      (await post(first.base, "keys.createKey", { apiId, prefix: "bench", ...fields }, rk)).key as string;
    // The identity-linked key of `npm run bench`'s verifyIdentity: its identity's one shared limit.
    if (SCENARIO === "verifyIdentity")
      await post(first.base, "identities.createIdentity", { externalId: "bench_user", ratelimits: [{ name: "shared", limit: BIG, duration: 60_000 }] }, rk);
    const [op, body] =
      SCENARIO === "ratelimitLimit"
        ? ["ratelimit.limit", { namespace: "bench", identifier: "user_1", limit: BIG, duration: 60_000 }]
        : SCENARIO === "createKey"
          ? ["keys.createKey", { apiId, prefix: "bench" }]
          : [
              "keys.verifyKey",
              {
                key: await keyOf(
                  SCENARIO === "verifyLimit"
                    ? { ratelimits: [{ name: "requests", limit: BIG, duration: 60_000 }] }
                    : SCENARIO === "verifyIdentity"
                      ? { externalId: "bench_user" }
                      : SCENARIO === "verifyCredits" || SCENARIO === "verifyCreditsMany"
                        ? { credits: { remaining: BIG } }
                        : {},
                ),
              },
            ];
    // verifyCreditsMany: every request the next of MANY_KEYS keys with credits (bench/many-bodies.ts).
    const bodiesFile = SCENARIO === "verifyCreditsMany" ? await manyKeysFile(() => keyOf({ credits: { remaining: BIG } })) : undefined;
    const storePids = [await localDatabasePid(DATABASE_URL), REDIS_URL === "" ? undefined : await localRedisPid(REDIS_URL)].filter(
      (p): p is number => p !== undefined,
    );
    // gRPC: h2load counts HTTP statuses only, so the key is checked to verify once first.
    const grpcMessage = SCENARIO === "verifyGrpc" ? toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key: body.key as string })) : undefined;
    if (grpcMessage !== undefined && (await post(first.base, "keys.verifyKey", body, rk)).valid !== true) throw new Error("the key does not verify");
    const http = (b: (typeof builds)[number]) => ({
      url: `${b.base}/v2/${op}`,
      body: JSON.stringify(body),
      ...(bodiesFile === undefined ? {} : { bodiesFile }),
      auth: `Bearer ${rk}`,
      connections: CONNECTIONS,
    });
    const grpc = (b: (typeof builds)[number], message: Uint8Array) => ({
      port: b.grpcPort,
      path: "/keyhold.v2.KeysService/VerifyKey",
      message,
      auth: `Bearer ${rk}`,
      connections: CONNECTIONS,
    });
    const load = (b: (typeof builds)[number], seconds: number) =>
      grpcMessage === undefined ? autocannon(http(b), seconds) : h2load(grpc(b, grpcMessage), seconds);
    const loadAsync = (b: (typeof builds)[number], seconds: number) =>
      grpcMessage === undefined ? autocannonAsync(http(b), seconds, 1) : h2loadAsync(grpc(b, grpcMessage), seconds);
    const check = (b: (typeof builds)[number], f: Figure) => {
      if (f.non2xx > 0 || f.errors > 0) throw new Error(`${b.checkout}: ${f.non2xx} non-2xx answers and ${f.errors} errors in a round`);
      b.figures.push(f);
    };
    if (INSTRUCTIONS) {
      log(`${SCENARIO}${REDIS_URL === "" ? "" : " with REDIS_URL"}: ${builds.length} builds under callgrind, ${WARM_UP_REQUESTS} requests each to warm up`);
      // Uncounted, and its first requests may time out while the build is still interpreted.
      for (const b of builds) autocannon(http(b), 0, WARM_UP_REQUESTS);
      // Counting on stays on from here: turned on, callgrind translates the code
      // anew, a stall in which some of a round's requests timed out.
      for (const b of builds) {
        callgrind(b.pid, "-i", "on");
        autocannon(http(b), 0, REQUESTS);
      }
      for (let r = 0; r < ROUNDS; r++) {
        for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
          callgrind(b.pid, "-z");
          const f = autocannon(http(b), 0, REQUESTS);
          callgrind(b.pid, "-d");
          // A request or two of a round may time out under valgrind (autocannon waits 10 s): not what is counted, which is answers.
          if (f.non2xx > 0 || f.errors > REQUESTS / 100) throw new Error(`${b.checkout}: ${f.non2xx} non-2xx answers and ${f.errors} errors in a round`);
          const dump = mainThreadInstructions(cgDir, b.pid);
          b.instructions.push(dump.instructions / f.requests);
          b.dumps.push(dump.file);
        }
        log(`round ${r + 1} of ${ROUNDS}`);
      }
      // A round's count only grows by what disturbs it (a deoptimised function run in
      // baseline code until it is optimised again, a major GC): the fewest of a build's rounds is its figure.
      const fewest = (b: (typeof builds)[number]) => Math.min(...b.instructions);
      console.log(`${SCENARIO}${REDIS_URL === "" ? "" : " with REDIS_URL"}, ${ROUNDS} rounds of ${REQUESTS} requests under callgrind`);
      console.log("build".padEnd(40), "fewest".padStart(8), "median".padStart(8), " instructions a request (main thread), thousands, every round");
      for (const b of builds)
        console.log(
          b.checkout.padEnd(40),
          fewest(b).toFixed(0).padStart(8),
          median(b.instructions).toFixed(0).padStart(8),
          ` ${b.instructions.map((x) => (x / 1000).toFixed(1)).join(" ")}`,
        );
      for (const b of builds.slice(1))
        console.log(`${b.checkout} against ${first.checkout}: fewest instructions a request ×${(fewest(b) / fewest(first)).toFixed(3)}`);
      if (KEEP !== "") keep(KEEP, builds);
      return;
    }
    log(
      `${SCENARIO}${REDIS_URL === "" ? "" : " with REDIS_URL"}: ${builds.length} builds on CPU 0, loaded ${TOGETHER ? "together" : "in turn"} from CPU 1, ${ROUNDS} rounds of ${SECONDS} s`,
    );
    for (const b of builds) load(b, 2);
    for (let r = 0; r < ROUNDS; r++) {
      if (TOGETHER) {
        const figures = await Promise.all(builds.map((b) => measuredAsync(b.pid, () => loadAsync(b, SECONDS))));
        for (const [i, b] of builds.entries()) check(b, figures[i] as Figure);
      } else
        for (const b of r % 2 === 0 ? builds : [...builds].reverse())
          check(
            b,
            measured(b.pid, () => load(b, SECONDS), storePids),
          );
      log(`round ${r + 1} of ${ROUNDS}`);
    }
    // A build that lost Redis during the rounds was measured on local counters.
    for (const b of builds)
      if (REDIS_URL !== "" && !(await redisUp(b.base, 0))) throw new Error(`${b.checkout}: Redis was lost during the rounds (degraded: redis)`);
    // The stores' columns only when the database runs on this machine (its pid readable).
    const store = (f: Figure) => f.storeCpuUsPerReq ?? Number.NaN;
    const withStore = storePids.length > 0 && !TOGETHER;
    console.log(
      `${SCENARIO}${REDIS_URL === "" ? "" : " with REDIS_URL"}, medians of ${ROUNDS} rounds of ${SECONDS} s${TOGETHER ? ", builds loaded together" : ""}`,
    );
    console.log("build".padEnd(40), "req/s".padStart(8), "µs/req".padStart(8), withStore ? "store µs".padStart(9) : "");
    for (const b of builds) {
      const m = (f: (x: Figure) => number) => median(b.figures.map(f));
      console.log(
        b.checkout.padEnd(40),
        m((x) => x.rps)
          .toFixed(0)
          .padStart(8),
        m((x) => x.cpuUsPerReq)
          .toFixed(1)
          .padStart(8),
        withStore ? m(store).toFixed(1).padStart(9) : "",
      );
    }
    for (const b of builds.slice(1)) {
      const ratio = (f: (x: Figure) => number) => median(b.figures.map((x, i) => f(x) / f(first.figures[i] as Figure))).toFixed(3);
      console.log(
        `${b.checkout} against ${first.checkout}, each round's ratio: req/s ×${ratio((x) => x.rps)}, µs/req ×${ratio((x) => x.cpuUsPerReq)}${withStore ? `, store µs ×${ratio(store)}` : ""}`,
      );
    }
  } finally {
    for (const c of running) await stop(c);
    await db.drop();
    if (cgDir !== "") fs.rmSync(cgDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
