// The long bad-input run (issue 7): the fuzz suites of test/fuzz with many more
// cases per operation than CI runs, under a fresh random seed printed first so
// a failure can be replayed with the same FUZZ_SEED.
//
//   node scripts/fuzz.mjs [runs per operation, default 5000] [vitest args…]
//   FUZZ_SEED=123 node scripts/fuzz.mjs 200     # replay a seed
//
// Uses DATABASE_URL's server when set, otherwise the private server (as npm test).
import { spawnSync } from "node:child_process";
import { randomInt } from "node:crypto";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const [first, ...rest] = process.argv.slice(2);
const runs = first !== undefined && /^\d+$/.test(first) ? first : "5000";
const extra = first !== undefined && !/^\d+$/.test(first) ? [first, ...rest] : rest;
const seed = process.env.FUZZ_SEED ?? String(randomInt(1, 2 ** 31 - 1));

console.log(`FUZZ_SEED=${seed} FUZZ_RUNS=${runs}`);
const r = spawnSync(path.join(root, "node_modules", ".bin", "vitest"), ["run", "test/fuzz", ...extra], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, FUZZ_SEED: seed, FUZZ_RUNS: runs },
});
console.log(`FUZZ_SEED=${seed} FUZZ_RUNS=${runs}: ${r.status === 0 ? "passed" : "FAILED (replay with the FUZZ_SEED above)"}`);
process.exit(r.status ?? 1);
