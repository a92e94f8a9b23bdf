// npm run bench: measures keyhold against baselines run on this machine in the
// same run, and prints each figure as a ratio to its baseline:
//   A  a bare Fastify JSON route            (for the JSON endpoints)
//   B  a bare @grpc/grpc-js unary handler   (for verifyKey over gRPC)
// The server under test and the load generator are separate processes, pinned to
// different cores when `taskset` exists. Writes bench/results.json.
// Then the scale part (bench/scale.ts; BENCH_SCALE=0 skips it): two instances vs
// one, hit/miss verification with 10,000 and BENCH_KEYS_LARGE (1,000,000) keys,
// and RSS with a full and a bounded cache; added to results.json as `scale`.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { VerifyKeyRequestSchema } from "../gen/keyhold/v2/keys_service_pb.js";
import { runScale } from "./scale.js";
import { hasTaskset, here, log, pinned, post, root, startKeyhold, stop } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

function startProcess(script: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const [cmd, args] = pinned(0, process.execPath, [script]);
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout?.on("data", (d: Buffer) => {
      buf += d.toString();
      const line = buf.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve({ child, port: JSON.parse(line).port });
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

interface Figure {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx?: number;
  ok?: number;
}

/** Runs autocannon for `seconds`, or for exactly `amount` requests when given. */
function autocannon(url: string, body: string, auth: string | undefined, seconds: number, connections = CONNECTIONS, amount?: number): Figure {
  const span = amount === undefined ? ["-d", String(seconds)] : ["-a", String(amount)];
  const args = [path.join(root, "node_modules", "autocannon", "autocannon.js"), "-c", String(connections), ...span, "-m", "POST", "-H", "content-type=application/json", "-b", body, "-j"];
  if (auth) args.push("-H", `authorization=${auth}`);
  args.push(url);
  const [cmd, a] = pinned(1, process.execPath, args);
  const out = JSON.parse(execFileSync(cmd, a, { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "ignore"] }).toString());
  return { rps: out.requests.average, p50: out.latency.p50, p99: out.latency.p99, errors: out.errors, non2xx: out.non2xx, ok: out["2xx"] };
}

const hasH2load = (() => {
  try {
    execFileSync("h2load", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** gRPC load with h2load (Debian's nghttp2-client) when it is installed, else with a grpc-js client process. */
function grpcLoad(port: number, rpcPath: string, body: Uint8Array, auth: string | undefined, seconds: number): Figure {
  return hasH2load ? h2load(port, rpcPath, body, auth, seconds) : grpcJsLoad(port, rpcPath, body, auth, seconds);
}

function h2load(port: number, rpcPath: string, body: Uint8Array, auth: string | undefined, seconds: number): Figure {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-bench-"));
  try {
    // One gRPC message frame: no compression, 4-byte big-endian length, the message.
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    Buffer.from(body).copy(frame, 5);
    fs.writeFileSync(path.join(dir, "body"), frame);
    const args = ["-c", String(CONNECTIONS), "-m", "1", "-t", "1", "-D", String(seconds), "--warm-up-time=2", "-d", path.join(dir, "body"), "-H", "content-type: application/grpc", "-H", "te: trailers", `--log-file=${path.join(dir, "log")}`];
    if (auth) args.push("-H", `authorization: ${auth}`);
    args.push(`http://127.0.0.1:${port}${rpcPath}`);
    const [cmd, a] = pinned(1, "h2load", args);
    const out = execFileSync(cmd, a, { maxBuffer: 16 << 20 }).toString();
    const done = Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(out)?.[1] ?? 0);
    const failed = Number(/(\d+) failed/.exec(out)?.[1] ?? 0);
    const times = fs
      .readFileSync(path.join(dir, "log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => Number(l.split("\t")[2]) / 1000)
      .filter((x) => Number.isFinite(x))
      .sort((x, y) => x - y);
    const pct = (q: number) => times[Math.min(times.length - 1, Math.floor((times.length * q) / 100))] ?? 0;
    return { rps: done / seconds, p50: pct(50), p99: pct(99), errors: failed };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function grpcJsLoad(port: number, rpcPath: string, body: Uint8Array, auth: string | undefined, seconds: number): Figure {
  const script = path.join(here, "grpc-load.js");
  const [cmd, a] = pinned(1, process.execPath, [script, `127.0.0.1:${port}`, rpcPath, Buffer.from(body).toString("base64"), auth ?? "-", String(CONNECTIONS), String(seconds), "2"]);
  const out = JSON.parse(execFileSync(cmd, a, { maxBuffer: 16 << 20 }).toString());
  return { rps: out.rps, p50: out.p50, p99: out.p99, errors: out.errors };
}

/** Starts keyhold with extra env (REDIS_URL etc. pass through from ours); cpu null = not pinned. */
async function main() {
  log(`${SECONDS}s per measurement, ${CONNECTIONS} connections${hasTaskset ? ", server on CPU 0 and load on CPU 1" : ""}; gRPC load from ${hasH2load ? "h2load" : "a grpc-js client (install nghttp2-client for h2load)"}`);
  const results: Record<string, Figure & { ratio?: number; baseline?: string }> = {};

  log("baseline A: bare Fastify JSON route");
  const a = await startProcess(path.join(here, "baseline-http.js"));
  autocannon(`http://127.0.0.1:${a.port}/v2/baseline`, "{}", undefined, 2);
  results.baselineA = autocannon(`http://127.0.0.1:${a.port}/v2/baseline`, "{}", undefined, SECONDS);
  await stop(a.child);

  log("baseline B: bare grpc-js unary handler");
  const b = await startProcess(path.join(here, "baseline-grpc.js"));
  const sample = toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key: "sk_xxxxxxxxxxxxxxxxxxxxxx" }));
  results.baselineB = grpcLoad(b.port, "/bench.Baseline/Ping", sample, undefined, SECONDS);
  await stop(b.child);

  log("keyhold: starting");
  const k = await startKeyhold();
  try {
    const cli = JSON.parse(
      execFileSync(process.execPath, [path.join(root, "bin", "keyhold.js"), "root-key", "create", "--workspace", `bench_${Date.now()}`, "--permissions", "*"], {
        cwd: root,
        stdio: ["ignore", "pipe", "inherit"],
      }).toString(),
    ) as { rootKey: string };
    const rk = cli.rootKey;
    const apiId = (await post(k.base, "apis.createApi", { name: "bench" }, rk)).apiId as string;
    const hot = (await post(k.base, "keys.createKey", { apiId, prefix: "bench", ratelimits: [{ name: "requests", limit: 1_000_000_000, duration: 60_000 }] }, rk)).key as string;
    const INITIAL = 1_000_000_000;
    const credited = await post(k.base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: INITIAL } }, rk);
    const verifyBody = JSON.stringify({ key: hot });
    const auth = `Bearer ${rk}`;

    log("keyhold: verifyKey over JSON, hot key with one rate limit");
    autocannon(`${k.base}/v2/keys.verifyKey`, verifyBody, auth, 2);
    results.verifyJson = autocannon(`${k.base}/v2/keys.verifyKey`, verifyBody, auth, SECONDS);

    log("keyhold: verifyKey over gRPC");
    const grpcBody = toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key: hot }));
    results.verifyGrpc = grpcLoad(k.grpcPort, "/keyhold.v2.KeysService/VerifyKey", grpcBody, auth, SECONDS);

    log("keyhold: verifyKey on a key with credits");
    const creditsUrl = `${k.base}/v2/keys.verifyKey`;
    const creditBody = JSON.stringify({ key: credited.key });
    autocannon(creditsUrl, creditBody, auth, 2);
    results.verifyCredits = autocannon(creditsUrl, creditBody, auth, SECONDS);
    // Exactness: a fresh key, a fixed number of concurrent verifications; every
    // answer was VALID and spent one credit, nothing more, nothing less.
    const exactKey = await post(k.base, "keys.createKey", { apiId, prefix: "bench", credits: { remaining: INITIAL } }, rk);
    const fixed = autocannon(creditsUrl, JSON.stringify({ key: exactKey.key }), auth, 0, CONNECTIONS, 20_000);
    const after = await post(k.base, "keys.getKey", { keyId: exactKey.keyId }, rk);
    const remaining = (after.credits as { remaining: number }).remaining;
    const answered = fixed.ok ?? 0;
    const creditsExact = { requests: 20_000, answered, spent: INITIAL - remaining, exact: INITIAL - remaining === answered && answered === 20_000 };

    log("keyhold: verifyKey on an identity-linked key (its identity's shared limit applied)");
    await post(k.base, "identities.createIdentity", { externalId: "bench_user", ratelimits: [{ name: "shared", limit: 1_000_000_000, duration: 60_000 }] }, rk);
    const linked = (await post(k.base, "keys.createKey", { apiId, prefix: "bench", externalId: "bench_user" }, rk)).key as string;
    const linkedBody = JSON.stringify({ key: linked });
    autocannon(`${k.base}/v2/keys.verifyKey`, linkedBody, auth, 2);
    results.verifyIdentity = autocannon(`${k.base}/v2/keys.verifyKey`, linkedBody, auth, SECONDS);

    log("keyhold: ratelimit.limit");
    const limitBody = JSON.stringify({ namespace: "bench", identifier: "user_1", limit: 1_000_000_000, duration: 60_000 });
    autocannon(`${k.base}/v2/ratelimit.limit`, limitBody, auth, 2);
    results.ratelimitLimit = autocannon(`${k.base}/v2/ratelimit.limit`, limitBody, auth, SECONDS);

    log("keyhold: createKey");
    results.createKey = autocannon(`${k.base}/v2/keys.createKey`, JSON.stringify({ apiId, prefix: "bench" }), auth, SECONDS);

    const A = results.baselineA.rps;
    const B = results.baselineB.rps;
    for (const [name, base, ref] of [
      ["verifyJson", A, "baselineA"],
      ["verifyCredits", A, "baselineA"],
      ["createKey", A, "baselineA"],
      ["verifyIdentity", A, "baselineA"],
      ["ratelimitLimit", A, "baselineA"],
      ["verifyGrpc", B, "baselineB"],
    ] as const) {
      const r = results[name];
      if (r) Object.assign(r, { ratio: r.rps / base, baseline: ref });
    }
    const targets = {
      verifyJson: { ratio: ">= 0.50", p99: "< 10 ms", met: (results.verifyJson?.ratio ?? 0) >= 0.5 && (results.verifyJson?.p99 ?? 99) < 10 },
      verifyGrpc: { ratio: ">= 0.50", met: (results.verifyGrpc?.ratio ?? 0) >= 0.5 },
      verifyCredits: { ratio: ">= 0.25", met: (results.verifyCredits?.ratio ?? 0) >= 0.25 },
      createKey: { keysPerSecond: ">= 1000", met: (results.createKey?.rps ?? 0) >= 1000 },
    };
    const report = { date: new Date().toISOString(), seconds: SECONDS, connections: CONNECTIONS, pinned: hasTaskset, grpcLoad: hasH2load ? "h2load" : "grpc-js", results, creditsExact, targets };
    fs.mkdirSync(path.join(root, "bench"), { recursive: true });
    fs.writeFileSync(path.join(root, "bench", "results.json"), `${JSON.stringify(report, null, 2)}\n`);

    const row = (name: string, f: Figure & { ratio?: number; baseline?: string }) =>
      `${name.padEnd(14)} ${f.rps.toFixed(0).padStart(8)} req/s  p50 ${String(f.p50).padStart(5)} ms  p99 ${String(f.p99).padStart(5)} ms` +
      (f.ratio !== undefined ? `  ${(f.ratio * 100).toFixed(0).padStart(4)}% of ${f.baseline}` : "") +
      (f.errors || f.non2xx ? `  (errors ${f.errors}, non-2xx ${f.non2xx ?? 0})` : "");
    console.log("");
    for (const [name, f] of Object.entries(results)) console.log(row(name, f));
    console.log(`credits: ${creditsExact.spent} spent for ${creditsExact.answered} answered verifications: ${creditsExact.exact ? "exact" : "NOT EXACT"}`);
    console.log(`targets: ${Object.entries(targets).map(([n, t]) => `${n} ${t.met ? "met" : "MISSED"}`).join(", ")}`);
    console.log("written to bench/results.json");
  } finally {
    await stop(k.child);
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
