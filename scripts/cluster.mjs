#!/usr/bin/env node
// npm run cluster -- up|down|status
//
// A local production topology for tests: a 3-node MariaDB Galera cluster and a
// Redis Cluster of 3 masters with a replica each, every node a process on
// 127.0.0.1, from the machine's own packages (nothing is downloaded). Data and
// logs live under .keyhold/cluster/; `up` starts from empty data, `down` stops
// every node and removes it.
//
//   galera node i (1..3): MySQL on PORT_BASE+i, group communication PORT_BASE+10+i,
//                         incremental state transfer +20+i, full state transfer +30+i
//   redis node j (1..6):  PORT_BASE+100+j
// PORT_BASE is KEYHOLD_CLUSTER_PORT_BASE, 14300 by default.
//
// `up` and `status` print one JSON line: a DATABASE_URL per Galera node, the Redis
// nodes, and each node's state. Other commands for failover tests:
//   kill galera|redis N      kill -9 one node
//   start galera|redis N     start it again (a Galera node rejoins by state transfer)
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, ".keyhold", "cluster");
const isRoot = process.getuid?.() === 0;
// Run as root, the nodes run as the user mysql, as Debian's own service does: rsync's
// state transfer fails as root (its daemon drops to the user nobody, which cannot
// write the joining node's data). .keyhold stays private to its owner (mode 0700),
// so then the data lives in a folder of the mysql user's under the temporary
// folder, and .keyhold/cluster links to it.
const dataHome = isRoot ? path.join(os.tmpdir(), `keyhold-cluster-${createHash("sha256").update(root).digest("hex").slice(0, 12)}`) : dir;
const BASE = Number(process.env.KEYHOLD_CLUSTER_PORT_BASE ?? 14300);
const GALERA = [1, 2, 3];
const REDIS = [1, 2, 3, 4, 5, 6];

const say = (s) => process.stderr.write(`cluster: ${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Missing extends Error {}

function need(file, pkg) {
  if (!fs.existsSync(file)) throw new Missing(`${file} is missing: install the Debian package ${pkg} (apt-get install ${pkg})`);
  return file;
}
function onPath(cmd, pkg) {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`])
      .toString()
      .trim();
  } catch {
    throw new Missing(`${cmd} is missing: install the Debian package ${pkg} (apt-get install ${pkg})`);
  }
}

const node = (i) => {
  const d = path.join(dataHome, "galera", `node${i}`);
  return {
    dir: d,
    data: path.join(d, "data"),
    cnf: path.join(d, "my.cnf"),
    sock: path.join(d, "mysql.sock"),
    pid: path.join(d, "mysqld.pid"),
    log: path.join(d, "mysqld.log"),
    port: BASE + i,
  };
};
const redisNode = (j) => {
  const d = path.join(dataHome, "redis", `node${j}`);
  return { dir: d, port: BASE + 100 + j, pid: path.join(d, "redis.pid"), log: path.join(d, "redis.log") };
};

const alive = (pidFile) => {
  try {
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
};

function mariadb(i, sql, { tcp = false } = {}) {
  const n = node(i);
  const conn = tcp ? ["--protocol=tcp", "-h127.0.0.1", `-P${n.port}`] : [`--socket=${n.sock}`];
  return execFileSync("mariadb", ["--no-defaults", ...conn, "-uroot", "-N", "-B", "-e", sql], { timeout: 5_000, stdio: ["ignore", "pipe", "pipe"] })
    .toString()
    .trim();
}

function galeraState(i) {
  try {
    const out = mariadb(i, "SHOW STATUS WHERE Variable_name IN ('wsrep_local_state_comment','wsrep_cluster_size','wsrep_ready')", { tcp: true });
    const m = Object.fromEntries(out.split("\n").map((l) => l.split("\t")));
    return { state: m.wsrep_local_state_comment, size: Number(m.wsrep_cluster_size), ready: m.wsrep_ready === "ON" };
  } catch {
    return undefined;
  }
}

function writeGaleraConfig(i) {
  const n = node(i);
  const peers = GALERA.map((k) => `127.0.0.1:${BASE + 10 + k}`).join(",");
  fs.writeFileSync(
    n.cnf,
    `[mysqld]
datadir=${n.data}
socket=${n.sock}
port=${n.port}
bind-address=127.0.0.1
pid-file=${n.pid}
log-error=${n.log}
${isRoot ? "user=mysql" : ""}
innodb_buffer_pool_size=64M
max_connections=300
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=keyhold_local
wsrep_cluster_address=gcomm://${peers}
wsrep_node_name=node${i}
wsrep_node_address=127.0.0.1:${BASE + 10 + i}
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:${BASE + 10 + i};ist.recv_addr=127.0.0.1:${BASE + 20 + i};gcache.size=64M"
wsrep_sst_receive_address=127.0.0.1:${BASE + 30 + i}
wsrep_sst_method=rsync
`,
  );
}

async function startGalera(i, { bootstrap = false } = {}) {
  const n = node(i);
  const mariadbd = need("/usr/sbin/mariadbd", "mariadb-server");
  const out = fs.openSync(n.log, "a");
  const args = [`--defaults-file=${n.cnf}`];
  if (bootstrap) args.push("--wsrep-new-cluster");
  const child = spawn(mariadbd, args, { detached: true, stdio: ["ignore", out, out] });
  let exited;
  child.once("exit", (code, signal) => (exited = signal ?? code));
  child.unref();
  const until = Date.now() + 90_000;
  for (;;) {
    const s = galeraState(i);
    if (s?.state === "Synced") return s;
    if (exited !== undefined) throw new Error(`galera node ${i} exited (${exited}); see ${path.relative(root, n.log)}`);
    if (Date.now() > until) throw new Error(`galera node ${i} not Synced within 90 s (state ${s?.state ?? "down"}); see ${path.relative(root, n.log)}`);
    await sleep(300);
  }
}

async function upGalera() {
  need("/usr/lib/galera/libgalera_smm.so", "galera-4");
  need("/usr/sbin/mariadbd", "mariadb-server");
  const installDb = onPath("mariadb-install-db", "mariadb-server");
  onPath("mariadb", "mariadb-client");
  fs.mkdirSync(dataHome, { recursive: true, mode: 0o700 });
  if (dataHome !== dir) {
    fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
    fs.rmSync(dir, { recursive: true, force: true });
    fs.symlinkSync(dataHome, dir);
  }
  for (const i of GALERA) {
    fs.mkdirSync(node(i).dir, { recursive: true });
    writeGaleraConfig(i);
  }
  if (isRoot) execFileSync("chown", ["-R", "mysql:mysql", dataHome]);
  for (const i of GALERA) {
    const n = node(i);
    const args = ["--no-defaults", `--datadir=${n.data}`, "--auth-root-authentication-method=normal", "--skip-test-db"];
    if (isRoot) args.push("--user=mysql");
    execFileSync(installDb, args, { stdio: ["ignore", "ignore", "pipe"] });
  }
  say("galera: starting node 1 (a new cluster)");
  await startGalera(1, { bootstrap: true });
  // TCP clients from 127.0.0.1 as root with no password, like the machine's own server; replicated to the others.
  mariadb(1, "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION");
  for (const i of GALERA.slice(1)) {
    say(`galera: starting node ${i} (joins by state transfer)`);
    await startGalera(i);
  }
}

async function startRedis(j) {
  const r = redisNode(j);
  const server = onPath("redis-server", "redis-server");
  const out = fs.openSync(r.log, "a");
  const child = spawn(
    server,
    [
      "--port",
      String(r.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      r.dir,
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
      "--cluster-node-timeout",
      "3000",
      "--save",
      "",
      "--appendonly",
      "no",
      "--pidfile",
      r.pid,
    ],
    { detached: true, stdio: ["ignore", out, out] },
  );
  child.unref();
  for (let k = 0; k < 100; k++) {
    try {
      if (
        execFileSync("redis-cli", ["-p", String(r.port), "ping"], { timeout: 2_000, stdio: ["ignore", "pipe", "ignore"] })
          .toString()
          .trim() === "PONG"
      )
        return;
    } catch {}
    await sleep(100);
  }
  throw new Error(`redis node ${j} did not answer; see ${path.relative(root, r.log)}`);
}

function redisClusterInfo(port) {
  try {
    const out = execFileSync("redis-cli", ["-p", String(port), "cluster", "info"], { timeout: 2_000, stdio: ["ignore", "pipe", "ignore"] }).toString();
    return Object.fromEntries(
      out
        .split(/\r?\n/)
        .filter(Boolean)
        .map((l) => l.split(":")),
    );
  } catch {
    return undefined;
  }
}

async function upRedis() {
  onPath("redis-server", "redis-server");
  onPath("redis-cli", "redis-tools");
  for (const j of REDIS) {
    fs.mkdirSync(redisNode(j).dir, { recursive: true });
    await startRedis(j);
  }
  say("redis: creating the cluster (3 masters, a replica each)");
  execFileSync("redis-cli", ["--cluster", "create", ...REDIS.map((j) => `127.0.0.1:${redisNode(j).port}`), "--cluster-replicas", "1", "--cluster-yes"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 30_000,
  });
  for (let k = 0; k < 150; k++) {
    if (REDIS.every((j) => redisClusterInfo(redisNode(j).port)?.cluster_state === "ok")) return;
    await sleep(200);
  }
  throw new Error("redis cluster not ok within 30 s");
}

async function stopPid(pidFile, name) {
  const pid = alive(pidFile);
  if (pid === undefined) return;
  process.kill(pid, "SIGTERM");
  for (let k = 0; k < 100; k++) {
    await sleep(200);
    if (alive(pidFile) === undefined) return;
  }
  say(`${name} did not stop within 20 s: killed`);
  try {
    process.kill(pid, "SIGKILL");
  } catch {}
}

async function down() {
  for (const j of REDIS) await stopPid(redisNode(j).pid, `redis node ${j}`);
  // The last node to stop is the one that could bootstrap again; they are all removed anyway.
  for (const i of [...GALERA].reverse()) await stopPid(node(i).pid, `galera node ${i}`);
  fs.rmSync(dataHome, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Where each node answers: a DATABASE_URL per Galera node, and the Redis Cluster's nodes. */
function urls() {
  return {
    galeraUrls: GALERA.map((i) => `mysql://root@127.0.0.1:${node(i).port}/keyhold`),
    redisNodes: REDIS.map((j) => `127.0.0.1:${redisNode(j).port}`),
  };
}

function status() {
  return {
    ...urls(),
    galera: GALERA.map((i) => ({ node: i, port: node(i).port, pid: alive(node(i).pid) ?? null, ...(galeraState(i) ?? { state: "down" }) })),
    redis: REDIS.map((j) => {
      const info = redisClusterInfo(redisNode(j).port);
      return { node: j, port: redisNode(j).port, pid: alive(redisNode(j).pid) ?? null, state: info?.cluster_state ?? "down" };
    }),
  };
}

async function main() {
  const [cmd, kind, nArg] = process.argv.slice(2);
  switch (cmd) {
    case "up": {
      if (fs.existsSync(dir) || fs.existsSync(dataHome)) {
        say("stopping and removing an earlier cluster");
        await down();
      }
      const t = Date.now();
      await upGalera();
      await upRedis();
      say(`up in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      console.log(JSON.stringify(status()));
      return;
    }
    case "down":
      await down();
      say("down");
      return;
    case "status":
      console.log(JSON.stringify(status()));
      return;
    case "kill":
    case "start": {
      const n = Number(nArg);
      if (!["galera", "redis"].includes(kind) || !Number.isInteger(n)) break;
      const pidFile = kind === "galera" ? node(n).pid : redisNode(n).pid;
      if (cmd === "kill") {
        const pid = alive(pidFile);
        if (pid !== undefined) process.kill(pid, "SIGKILL");
        say(`${kind} node ${n}: killed (${pid ?? "was not running"})`);
      } else if (kind === "galera") await startGalera(n);
      else await startRedis(n);
      return;
    }
  }
  console.error("usage: npm run cluster -- up | down | status | kill galera|redis N | start galera|redis N");
  process.exit(2);
}

main().catch((err) => {
  say(err instanceof Missing ? err.message : (err.stack ?? String(err)));
  process.exit(err instanceof Missing ? 3 : 1);
});
