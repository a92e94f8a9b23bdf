// npm run bench:cluster: one keyhold instance against two, on the local cluster
// that `npm run cluster -- up` starts (3 Galera nodes, a Redis Cluster of 3
// masters). Each instance is given the three Galera nodes, starting from a
// different one, and the Redis Cluster. Two scenarios:
//   - verifyKey of a key with a rate limit (a hot key: the cache, then one script
//     call to the Redis Cluster a turn);
//   - createKey (a write to Galera, certified on every node).
// One instance gets 50 connections, two get 25 each; rounds alternate one, two,
// one, …, so each two-instance figure sits between two one-instance figures, and
// its ratio is to their mean. Medians of BENCH_ROUNDS (3). Nothing is pinned: on
// a machine of two cores the instances, the load, three mariadbd and six
// redis-server share them, so this measures the machine as much as keyhold;
// what it must show is that nothing fails. Every round is kept in
// bench/results-cluster.json.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../src/storage/db.js";
import { autocannonAsync } from "./load.js";
import { cpuMicros } from "./proc-cpu.js";
import { log, post, root, startKeyhold, stop } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

interface Status {
  galeraUrls: string[];
  redisNodes: string[];
  galera: { node: number; ready?: boolean; state: string }[];
  redis: { node: number; state: string }[];
}

function clusterStatus(): Status {
  const out = execFileSync(process.execPath, [path.join(root, "scripts", "cluster.mjs"), "status"], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  const s = JSON.parse(out.toString().trim().split("\n").pop() as string) as Status;
  const down = [
    ...s.galera.filter((g) => g.ready !== true).map((g) => `galera ${g.node} (${g.state})`),
    ...s.redis.filter((r) => r.state !== "ok").map((r) => `redis ${r.node} (${r.state})`),
  ];
  if (down.length > 0) throw new Error(`the local cluster is not up (${down.join(", ")}): start it with \`npm run cluster -- up\``);
  return s;
}

interface Round {
  round: number;
  scenario: string;
  instances: 1 | 2;
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Server CPU per answer, µs, each instance. */
  cpuUsPerReq: number[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function main() {
  const status = clusterStatus();
  const database = `keyhold_bench_cluster_${Date.now()}`;
  const nodesUrl = (order: number[]) => {
    const urls = order.map((i) => new URL(status.galeraUrls[i] as string));
    const first = urls[0] as URL;
    return `mysql://${first.username}${first.password === "" ? "" : `:${first.password}`}@${urls.map((u) => u.host).join(",")}/${database}`;
  };
  const REDIS_URL = `redis-cluster://${status.redisNodes.join(",")}`;
  log(`cluster: database ${database}; two instances, Galera nodes 1 and 2 first, sharing the Redis Cluster`);
  const a = await startKeyhold({ DATABASE_URL: nodesUrl([0, 1, 2]), REDIS_URL }, null);
  const b = await startKeyhold({ DATABASE_URL: nodesUrl([1, 2, 0]), REDIS_URL }, null);
  const rounds: Round[] = [];
  try {
    const cli = execFileSync(process.execPath, [path.join(root, "bin", "keyhold.js"), "root-key", "create", "--workspace", database, "--permissions", "*"], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: nodesUrl([2, 0, 1]) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const rk = (JSON.parse(cli.toString().trim().split("\n").pop() as string) as { rootKey: string }).rootKey;
    const auth = `Bearer ${rk}`;
    const apiId = (await post(a.base, "apis.createApi", { name: "bench-cluster" }, rk)).apiId as string;
    const limited = (await post(a.base, "keys.createKey", { apiId, ratelimits: [{ name: "bench", limit: 1_000_000_000, duration: 60_000 }] }, rk))
      .key as string;
    const scenarios = [
      { name: "verifyKey, a key with a rate limit", op: "keys.verifyKey", body: JSON.stringify({ key: limited }) },
      { name: "createKey", op: "keys.createKey", body: JSON.stringify({ apiId }) },
    ];
    const run = async (scenario: (typeof scenarios)[number], round: number, instances: 1 | 2): Promise<Round> => {
      const servers = instances === 1 ? [a] : [a, b];
      const per = Math.max(1, Math.floor(CONNECTIONS / instances));
      const cpu0 = servers.map((s) => cpuMicros(s.child.pid as number));
      const loads = await Promise.all(
        servers.map((s) => autocannonAsync({ url: `${s.base}/v2/${scenario.op}`, body: scenario.body, auth, connections: per }, SECONDS)),
      );
      const cpu = servers.map((s, i) => (cpuMicros(s.child.pid as number) - (cpu0[i] as number)) / Math.max(1, loads[i]?.requests ?? 0));
      const r: Round = {
        round,
        scenario: scenario.name,
        instances,
        rps: loads.reduce((t, l) => t + l.rps, 0),
        p99: Math.max(...loads.map((l) => l.p99)),
        errors: loads.reduce((t, l) => t + l.errors, 0),
        non2xx: loads.reduce((t, l) => t + l.non2xx, 0),
        cpuUsPerReq: cpu,
      };
      log(
        `  ${scenario.name}, round ${round}, ${instances} instance${instances === 1 ? "" : "s"}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms, ` +
          `CPU ${cpu.map((c) => c.toFixed(0)).join(" + ")} µs/req, errors ${r.errors}, non-2xx ${r.non2xx}`,
      );
      rounds.push(r);
      return r;
    };
    const lines: string[] = [];
    for (const scenario of scenarios) {
      // Warm both (caches, pools, the Redis slot map).
      await Promise.all([a, b].map((s) => autocannonAsync({ url: `${s.base}/v2/${scenario.op}`, body: scenario.body, auth, connections: 10 }, 1)));
      const ratios: number[] = [];
      let before = await run(scenario, 0, 1);
      for (let round = 1; round <= ROUNDS; round++) {
        const two = await run(scenario, round, 2);
        const after = await run(scenario, round, 1);
        ratios.push(two.rps / ((before.rps + after.rps) / 2));
        before = after;
      }
      const mine = rounds.filter((r) => r.scenario === scenario.name);
      const one = mine.filter((r) => r.instances === 1);
      const two = mine.filter((r) => r.instances === 2);
      const failures = mine.reduce((t, r) => t + r.errors + r.non2xx, 0);
      lines.push(
        `${scenario.name}: one instance ${median(one.map((r) => r.rps)).toFixed(0)} req/s (CPU ${median(one.map((r) => r.cpuUsPerReq[0] as number)).toFixed(0)} µs/req), ` +
          `two ${median(two.map((r) => r.rps)).toFixed(0)} req/s; two/one ${median(ratios).toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(" ")}); ` +
          `errors and non-2xx: ${failures}`,
      );
    }
    const file = path.join(root, "bench", "results-cluster.json");
    fs.writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), cpus: os.cpus().length, seconds: SECONDS, rounds }, null, 2)}\n`);
    console.log(lines.join("\n"));
    log(`every round: ${path.relative(root, file)}`);
    if (rounds.some((r) => r.errors + r.non2xx > 0)) process.exitCode = 1;
  } finally {
    await stop(a.child);
    await stop(b.child);
    const db = await openDatabase(nodesUrl([0, 1, 2]));
    await db.pool.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await db.close();
  }
}

main().catch((err) => {
  console.error(`bench:cluster: ${(err as Error).message}`);
  process.exit(1);
});
