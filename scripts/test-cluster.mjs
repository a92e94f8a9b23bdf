#!/usr/bin/env node
// npm run test:cluster: starts the local cluster (scripts/cluster.mjs), runs the
// tests of test/cluster/ against it, then the public acceptance suite (when it is
// beside the checkout, ../shared/acceptance) against one Galera node, and stops
// the cluster whatever happened. Exits non-zero when anything failed.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const run = (cmd, args, env = {}) => spawnSync(cmd, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } }).status ?? 1;

let failed = 0;
try {
  if (run("npm", ["run", "build", "--silent"]) !== 0) process.exit(1);
  const up = execFileSync(process.execPath, [path.join(root, "scripts", "cluster.mjs"), "up"], { cwd: root, stdio: ["ignore", "pipe", "inherit"] }).toString();
  const cluster = up.trim().split("\n").pop();
  failed += run(path.join(root, "node_modules", ".bin", "vitest"), ["run", "--config", "vitest.cluster.config.ts"], { KEYHOLD_CLUSTER: cluster });
  const acceptance = path.resolve(root, "..", "shared", "acceptance", "run.sh");
  if (fs.existsSync(acceptance)) {
    const node1 = new URL(JSON.parse(cluster).galeraUrls[0]);
    node1.pathname = "/";
    failed += run(acceptance, [".", "--group", process.env.ACCEPTANCE_GROUPS ?? "auth,apis,keys,identities,ratelimit"], {
      ACCEPTANCE_MYSQL_URL: node1.toString().replace(/\/$/, ""),
    });
  } else {
    console.error("test:cluster: the acceptance suite is not beside the checkout (../shared/acceptance); skipped");
  }
} finally {
  run(process.execPath, [path.join(root, "scripts", "cluster.mjs"), "down"]);
}
process.exit(failed === 0 ? 0 : 1);
