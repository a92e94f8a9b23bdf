// npm run bench:import: how fast `keyhold keys import` moves keys in, against a
// baseline measured in the same run on the same server: keys.createKey at 50
// connections (autocannon), the fastest way in through the one-key API.
// BENCH_IMPORT_KEYS plaintext keys (100,000) go into a temporary JSONL file; a
// keyhold server process runs on a fresh database on DATABASE_URL's server (or
// the private one), dropped at the end; the root key and the migration come from
// the CLI, as a user would make them. Server on CPU 0, CLI and load on CPU 1,
// when `taskset` exists.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freshDatabase, hasTaskset, log, pinned, post, root, startKeyhold, stop } from "./support.js";

const KEYS = Number(process.env.BENCH_IMPORT_KEYS ?? 100_000);
const BASELINE_KEYS = Number(process.env.BENCH_IMPORT_BASELINE_KEYS ?? 20_000);
const CONNECTIONS = 50;
const TARGET_SECONDS = 60;

/** The CLI as a user runs it; its one JSON line on stdout. */
function cli(args: string[], env: Record<string, string>): Record<string, unknown> {
  const [cmd, a] = pinned(1, process.execPath, [path.join(root, "bin", "keyhold.js"), ...args]);
  const out = execFileSync(cmd, a, {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 16 << 20,
  });
  return JSON.parse(out.toString()) as Record<string, unknown>;
}

/** keys.createKey for exactly `amount` requests at CONNECTIONS connections: keys/s. */
function createKeyRate(base: string, apiId: string, rootKey: string, amount: number): { keysPerSecond: number; ok: number } {
  const args = [
    path.join(root, "node_modules", "autocannon", "autocannon.js"),
    "-c",
    String(CONNECTIONS),
    "-a",
    String(amount),
    "-m",
    "POST",
    "-H",
    "content-type=application/json",
  ];
  args.push("-H", `authorization=Bearer ${rootKey}`, "-b", JSON.stringify({ apiId, prefix: "bench" }), "-j", `${base}/v2/keys.createKey`);
  const [cmd, a] = pinned(1, process.execPath, args);
  const out = JSON.parse(execFileSync(cmd, a, { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "ignore"] }).toString());
  const seconds = out.duration as number;
  return { keysPerSecond: out["2xx"] / seconds, ok: out["2xx"] };
}

function writeKeys(file: string, n: number): string[] {
  const sample: string[] = [];
  const fd = fs.openSync(file, "w");
  try {
    let chunk = "";
    for (let i = 0; i < n; i++) {
      const key = `legacy_${randomBytes(24).toString("base64url")}`;
      if (i % Math.ceil(n / 5) === 0) sample.push(key);
      chunk += `${JSON.stringify({ key, name: `legacy ${i}` })}\n`;
      if (chunk.length > 1 << 20) {
        fs.writeSync(fd, chunk);
        chunk = "";
      }
    }
    fs.writeSync(fd, chunk);
  } finally {
    fs.closeSync(fd);
  }
  return sample;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-bench-import-"));
  const file = path.join(dir, "keys.jsonl");
  log(`writing ${KEYS} plaintext keys to ${file}`);
  const sample = writeKeys(file, KEYS);

  const database = await freshDatabase("keyhold_bench_import");
  const url = database.url;
  log(`fresh database ${database.name}${hasTaskset ? "; server on CPU 0, CLI and load on CPU 1" : ""}`);
  const k = await startKeyhold({ DATABASE_URL: url });
  try {
    const workspace = `bench_import_${Date.now()}`;
    const { rootKey } = cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api,apis.*.create_key,apis.*.verify_key"], {
      DATABASE_URL: url,
    }) as { rootKey: string };
    const { migrationId } = cli(["migration", "create", "--workspace", workspace, "--algorithm", "sha256"], { DATABASE_URL: url }) as { migrationId: string };
    const apiId = (await post(k.base, "apis.createApi", { name: "import" }, rootKey)).apiId as string;

    log(`keyhold keys import: ${KEYS} keys`);
    const began = process.hrtime.bigint();
    const summary = cli(["keys", "import", file, "--api", apiId, "--migration", migrationId, "--url", k.base], { KEYHOLD_ROOT_KEY: rootKey }) as {
      imported: number;
      failed: number;
      durationMs: number;
    };
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    if (summary.imported !== KEYS || summary.failed !== 0) throw new Error(`import: ${JSON.stringify(summary)}`);
    for (const key of sample) {
      const v = await post(k.base, "keys.verifyKey", { key }, rootKey);
      if (v.valid !== true) throw new Error(`an imported key does not verify: ${JSON.stringify(v)}`);
    }

    log(`baseline: keys.createKey, ${BASELINE_KEYS} keys at ${CONNECTIONS} connections`);
    const baseApi = (await post(k.base, "apis.createApi", { name: "baseline" }, rootKey)).apiId as string;
    createKeyRate(k.base, baseApi, rootKey, Math.min(2_000, BASELINE_KEYS)); // warm-up
    const baseline = createKeyRate(k.base, baseApi, rootKey, BASELINE_KEYS);

    const rate = KEYS / seconds;
    const result = {
      date: new Date().toISOString(),
      pinned: hasTaskset,
      keys: KEYS,
      import: { seconds: Number(seconds.toFixed(2)), keysPerSecond: Math.round(rate), cliDurationMs: summary.durationMs, verifiedSample: sample.length },
      baseline: { what: `keys.createKey at ${CONNECTIONS} connections`, keys: baseline.ok, keysPerSecond: Math.round(baseline.keysPerSecond) },
      ratio: Number((rate / baseline.keysPerSecond).toFixed(2)),
      target: { seconds: `< ${TARGET_SECONDS} for 100,000 keys`, met: KEYS >= 100_000 ? seconds < TARGET_SECONDS : null },
    };
    console.log("");
    console.log(`keys import     ${KEYS} keys in ${seconds.toFixed(1)} s: ${Math.round(rate)} keys/s (whole CLI run: read, hash, send, record)`);
    console.log(`baseline        keys.createKey at ${CONNECTIONS} connections: ${Math.round(baseline.keysPerSecond)} keys/s`);
    console.log(`ratio           ${result.ratio}x the baseline`);
    if (result.target.met !== null) console.log(`target          100,000 keys in under ${TARGET_SECONDS} s: ${result.target.met ? "met" : "MISSED"}`);
    console.log(JSON.stringify(result));
  } finally {
    await stop(k.child);
    await database.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
