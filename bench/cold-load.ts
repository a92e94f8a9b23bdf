// Cold-key load generator: POSTs keys.verifyKey once for every key in a file (one
// plaintext a line), in order, with N concurrent workers over keep-alive
// connections. Each request carries a different key, so every verification
// misses the server's cache. Prints one JSON line: rps, p50, p99, p999, max (ms), errors,
// non2xx, ok, valid.
//   node dist/bench/cold-load.js <url> <authorization|-> <keysFile> [<workers> [<warmKey> <warmRequests>]]
// With a warm key (one the server has verified already, so a hit), the workers
// first send warmRequests verifications of it, not counted: a fresh Node process
// compiles its own HTTP client code during its first few thousand requests, and
// measured from a cold generator the first ~500 ms of a 2 s run came out slow
// whatever the server did (bench/README.md, "Cold verification").
// COLD_LOAD_PIDS=<server>[,<store>...]: the CPU those processes spend over the
// timed part only (the warm-up left out) is printed too, a request:
// cpuUsPerReq for the first, storeCpuUsPerReq for the rest together; and
// waitUsPerReq, how long the first's main thread waited, runnable, for a CPU
// (proc-cpu.ts).
// COLD_LOAD_METRICS=<url> and COLD_LOAD_METRICS_OUT=<prefix>: the server's
// /metrics text fetched just before the timed part and just after it, written
// to <prefix>.before and <prefix>.after (bench/cold-ab.ts reads them).
// COLD_LOAD_RATE=<requests a second>: paced (open-loop) instead of as fast as
// the workers go: request i is due at i/rate seconds after the start, sent then
// whether or not earlier answers are back, over at most <workers> connections
// (a request finding them all busy waits for one). Its latency is counted from
// when it was due, not from when it went out, so a server (or generator) that
// falls behind shows in p50/p99 instead of slowing the offered load (what a
// closed loop does: there, with 50 workers, the p50 is 50 / rps by Little's
// law, so a latency read at saturation measures the queue the workers make).
// Printed besides: rate (what was offered), sendLagP99 (ms; how late the
// generator itself sent, part of every latency it reports).
import fs from "node:fs";
import http from "node:http";
import { cpuMicros, runQueueWaitMicros } from "./proc-cpu.js";

const [url, auth, file, workersArg, warmKey, warmArg] = process.argv.slice(2);
if (!url || !auth || !file || (warmKey !== undefined && !(Number(warmArg) >= 0))) {
  process.stderr.write("usage: cold-load.js <url> <authorization|-> <keysFile> [<workers> [<warmKey> <warmRequests>]]\n");
  process.exit(2);
}
const workers = Number(workersArg ?? 50);
const rate = process.env.COLD_LOAD_RATE === undefined || process.env.COLD_LOAD_RATE === "" ? undefined : Number(process.env.COLD_LOAD_RATE);
if (rate !== undefined && !(rate > 0 && Number.isFinite(rate))) {
  process.stderr.write(`cold-load: COLD_LOAD_RATE must be a positive number, not ${JSON.stringify(process.env.COLD_LOAD_RATE)}\n`);
  process.exit(2);
}
const keys = fs
  .readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.length > 0);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: workers });

let next = 0;
let errors = 0;
let non2xx = 0;
let ok = 0;
let valid = 0;
const times = new Float64Array(keys.length);
let timed = 0;

/** One verification; its latency counted from `due` (hrtime ns; now when not given). */
function verify(key: string, due?: bigint): Promise<void> {
  const body = JSON.stringify({ key });
  const headers: Record<string, string | number> = { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
  if (auth !== "-") headers.authorization = auth as string;
  const t0 = due ?? process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        times[timed++] = Number(process.hrtime.bigint() - t0) / 1e6;
        if (res.statusCode === 200) {
          ok++;
          try {
            if ((JSON.parse(Buffer.concat(chunks).toString()) as { data?: { valid?: boolean } }).data?.valid === true) valid++;
          } catch {
            /* counted as ok but not valid */
          }
        } else non2xx++;
        resolve();
      });
      res.on("error", () => {
        errors++;
        resolve();
      });
    });
    req.on("error", () => {
      errors++;
      resolve();
    });
    req.end(body);
  });
}

async function worker(): Promise<void> {
  for (;;) {
    const i = next++;
    if (i >= keys.length) return;
    await verify(keys[i] as string);
  }
}

const sendLags = new Float64Array(keys.length);
/** Paced: every key sent when it is due (checked again at least every millisecond), all answers awaited. */
function paced(perSecond: number): Promise<void> {
  const start = process.hrtime.bigint();
  const stepNs = 1e9 / perSecond;
  const inFlight: Promise<void>[] = [];
  return new Promise((resolve) => {
    const pump = (): void => {
      const now = process.hrtime.bigint();
      const elapsed = Number(now - start);
      while (next < keys.length && next * stepNs <= elapsed) {
        const i = next++;
        const due = start + BigInt(Math.round(i * stepNs));
        sendLags[i] = Number(now - due) / 1e6;
        inFlight.push(verify(keys[i] as string, due));
      }
      if (next < keys.length) setTimeout(pump, Math.max(0, Math.min(1, (next * stepNs - elapsed) / 1e6)));
      else void Promise.all(inFlight).then(() => resolve());
    };
    pump();
  });
}

if (warmKey !== undefined) {
  let warmLeft = Number(warmArg);
  const warmWorker = async (): Promise<void> => {
    while (warmLeft-- > 0) await verify(warmKey);
  };
  await Promise.all(Array.from({ length: Math.min(workers, 50) }, warmWorker));
  if (errors > 0 || non2xx > 0 || valid !== ok) {
    process.stderr.write(`cold-load: the warm key did not verify (${errors} errors, ${non2xx} non-2xx, ${ok - valid} not valid)\n`);
    process.exit(1);
  }
  timed = 0;
  ok = 0;
  valid = 0;
}

const [serverPid, ...storePids] = (process.env.COLD_LOAD_PIDS ?? "")
  .split(",")
  .filter((p) => p !== "")
  .map(Number);
const cpuOf = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMicros(pid), 0);
const metricsUrl = process.env.COLD_LOAD_METRICS;
const metricsOut = process.env.COLD_LOAD_METRICS_OUT;
const saveMetrics = async (suffix: string): Promise<void> => {
  if (metricsUrl === undefined || metricsOut === undefined) return;
  fs.writeFileSync(`${metricsOut}.${suffix}`, await (await fetch(metricsUrl)).text());
};
await saveMetrics("before");
const serverCpu0 = serverPid === undefined ? 0 : cpuMicros(serverPid);
const serverWait0 = serverPid === undefined ? 0 : runQueueWaitMicros(serverPid);
const storeCpu0 = cpuOf(storePids);
const started = process.hrtime.bigint();
if (rate === undefined) await Promise.all(Array.from({ length: workers }, worker));
else await paced(rate);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu =
  serverPid === undefined
    ? {}
    : {
        cpuUsPerReq: (cpuMicros(serverPid) - serverCpu0) / keys.length,
        waitUsPerReq: (runQueueWaitMicros(serverPid) - serverWait0) / keys.length,
        ...(storePids.length > 0 ? { storeCpuUsPerReq: (cpuOf(storePids) - storeCpu0) / keys.length } : {}),
      };
agent.destroy();
await saveMetrics("after");
const sorted = times.subarray(0, timed).sort();
const pct = (q: number) => (sorted.length === 0 ? 0 : Number((sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * q) / 100))] ?? 0).toFixed(2)));
const lagSorted = sendLags.sort();
const paceFigures =
  rate === undefined ? {} : { rate, sendLagP99: Number((lagSorted[Math.min(lagSorted.length - 1, Math.floor(lagSorted.length * 0.99))] ?? 0).toFixed(2)) };
process.stdout.write(
  `${JSON.stringify({ requests: keys.length, seconds, rps: keys.length / seconds, p50: pct(50), p99: pct(99), p999: pct(99.9), max: pct(100), errors, non2xx, ok, valid, ...paceFigures, ...cpu })}\n`,
);
