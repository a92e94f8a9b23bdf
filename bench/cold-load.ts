// Cold-key load generator: POSTs keys.verifyKey once for every key in a file (one
// plaintext a line), in order, with N concurrent workers over keep-alive
// connections. Each request carries a different key, so every verification
// misses the server's cache. Prints one JSON line: rps, p50, p99 (ms), errors,
// non2xx, ok, valid.
//   node dist/bench/cold-load.js <url> <authorization|-> <keysFile> <workers>
import fs from "node:fs";
import http from "node:http";

const [url, auth, file, workersArg] = process.argv.slice(2);
if (!url || !auth || !file) {
  process.stderr.write("usage: cold-load.js <url> <authorization|-> <keysFile> [workers]\n");
  process.exit(2);
}
const workers = Number(workersArg ?? 50);
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

function verify(key: string): Promise<void> {
  const body = JSON.stringify({ key });
  const headers: Record<string, string | number> = { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
  if (auth !== "-") headers.authorization = auth as string;
  const t0 = process.hrtime.bigint();
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

const started = process.hrtime.bigint();
await Promise.all(Array.from({ length: workers }, worker));
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
agent.destroy();
const sorted = times.subarray(0, timed).sort();
const pct = (q: number) => (sorted.length === 0 ? 0 : Number((sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * q) / 100))] ?? 0).toFixed(2)));
process.stdout.write(
  `${JSON.stringify({ requests: keys.length, seconds, rps: keys.length / seconds, p50: pct(50), p99: pct(99), errors, non2xx, ok, valid })}\n`,
);
