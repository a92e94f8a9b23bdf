// `npm test`: proto checks (buf lint, format, gen/ current, buf breaking), Biome (lint and
// format), typecheck, then the whole vitest suite against a real database. Ends with one line
// "N passed, N failed" (", N skipped" when any were skipped).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const bin = (name) => path.join(root, "node_modules", ".bin", name);
const step = (label, cmd, args) => {
  process.stderr.write(`\n== ${label}\n`);
  const started = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit" });
  // How long each step took, so that a slow CI says where its time went.
  process.stderr.write(`== ${label}: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return r.status ?? 1;
};

let failedSteps = 0;
if (step("proto: buf lint, buf format, gen/ current", process.execPath, [path.join(root, "scripts", "check-gen.mjs")]) !== 0) failedSteps++;
if (step("proto: buf breaking against every version of proto/ on main", process.execPath, [path.join(root, "scripts", "buf-breaking.mjs")]) !== 0)
  failedSteps++;
if (step("lint and format: biome ci", bin("biome"), ["ci", "."]) !== 0) failedSteps++;
if (step("typecheck", bin("tsc"), ["--noEmit", "-p", "tsconfig.json"]) !== 0) failedSteps++;
if (step("typecheck: dashboard", bin("tsc"), ["-p", path.join("dashboard", "tsconfig.json")]) !== 0) failedSteps++;
// Tests that run the real server or CLI as a process use dist/: build it fresh.
if (step("build", bin("tsc"), ["-p", "tsconfig.build.json"]) !== 0) failedSteps++;
if (step("build: dashboard", bin("vite"), ["build", "--config", path.join("dashboard", "vite.config.ts"), "--logLevel", "warn"]) !== 0) failedSteps++;

const report = path.join(root, ".vitest-results.json");
fs.rmSync(report, { force: true });
const rc = step("vitest", bin("vitest"), ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)]);

let passed = 0;
let failed = failedSteps;
let skipped = 0;
try {
  const r = JSON.parse(fs.readFileSync(report, "utf8"));
  passed = r.numPassedTests ?? 0;
  failed += r.numFailedTests ?? 0;
  skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A file that failed before running any test counts as one failure.
  for (const f of r.testResults ?? []) if (f.status === "failed" && (f.assertionResults ?? []).length === 0) failed++;
} catch {
  failed++;
}
if (rc !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
process.exit(failed === 0 ? 0 : 1);
