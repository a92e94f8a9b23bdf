// Integration test for the private MySQL-compatible server (src/embedded-db/private-server.ts).
// Needs MariaDB or MySQL binaries on the machine (Debian: apt-get install mariadb-server);
// skipped otherwise. Uses throw-away project folders under os.tmpdir() and never touches a
// system server (the private one runs with --no-defaults, its own socket, --skip-networking).
//
//   npx vitest run test/integration/private-server.test.ts
//
// To try the module by hand without vitest: npm run build && node dist/src/embedded-db/private-server.js [projectDir] [--hold]
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type { RowDataPacket } from "mysql2/promise";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { bufferPoolBytes, NoDatabaseServerError, type PrivateServer, serverArgs, startPrivateServer } from "../../src/embedded-db/private-server.js";

const TIMEOUT = 120_000;

const haveServerBinary = ["mariadbd", "mysqld"].some((name) =>
  [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/libexec"]
    .filter((d) => d !== "")
    .some((d) => existsSync(path.join(d, name))),
);

// ---- helpers ---------------------------------------------------------------

const lines: string[] = [];
const log = (line: string): void => {
  lines.push(line);
  if (process.env.KEYHOLD_TEST_VERBOSE) process.stderr.write(`[private-server] ${line}\n`);
};

const cleanups: Array<() => Promise<void> | void> = [];

function tempProjectDir(prefix = "keyhold-ps-"): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts (or joins) and remembers the handle so afterAll stops it even if a test fails. */
async function start(projectDir: string): Promise<PrivateServer & { ms: number }> {
  const t0 = performance.now();
  const server = await startPrivateServer({ projectDir, log });
  const ms = Math.round(performance.now() - t0);
  cleanups.unshift(() => server.stop());
  return Object.assign(server, { ms });
}

async function query<T extends RowDataPacket>(socketPath: string, sql: string): Promise<T[]> {
  const conn = await mysql.createConnection({ socketPath, user: "root", connectTimeout: 5000 });
  try {
    const [rows] = await conn.query<T[]>(sql);
    return rows;
  } finally {
    await conn.end();
  }
}

async function answers(socketPath: string): Promise<boolean> {
  try {
    await query(socketPath, "SELECT 1");
    return true;
  } catch {
    return false;
  }
}

function serverPid(projectDir: string): number {
  return Number.parseInt(readFileSync(path.join(projectDir, ".keyhold", "mysql.pid"), "utf8").trim(), 10);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

async function waitUntil(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A pid that certainly belongs to no running process. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", ""]);
  return r.pid;
}

afterAll(async () => {
  for (const c of cleanups) {
    try {
      await c();
    } catch {
      // best effort
    }
  }
}, TIMEOUT);

// ---- tests -------------------------------------------------------------------

describe.skipIf(!haveServerBinary)("private MySQL-compatible server", () => {
  const projectDir = tempProjectDir();
  const timings: Record<string, number> = {};

  it(
    "starts a server, is joined by a second caller, and stops",
    async () => {
      const first = await start(projectDir);
      timings["first start (incl. initialisation)"] = first.ms;
      expect(first.owned).toBe(true);
      expect(first.socketPath).toBe(path.join(projectDir, ".keyhold", "mysql.sock"));
      expect(lines.some((l) => /^starting private (MariaDB|MySQL) [\d.]+ in .*mysql \.\.\.$/.test(l))).toBe(true);

      const [row] = await query<RowDataPacket & { v: string }>(first.socketPath, "SELECT VERSION() AS v");
      expect(row?.v).toMatch(/^\d+\.\d+\.\d+/);

      // It is a private server, not the system one: its own data folder, no TCP.
      const [vars] = await query<RowDataPacket & { datadir: string; skip: number | string }>(
        first.socketPath,
        "SELECT @@datadir AS datadir, @@skip_networking AS skip",
      );
      expect(path.resolve(vars?.datadir ?? "")).toBe(path.join(projectDir, ".keyhold", "mysql"));
      expect(Number(vars?.skip)).toBe(1);
      // Its buffer pool sized to this machine (an eighth of its memory, 128 MB to 1 GB), not the server's 128 MB default.
      const [pool] = await query<RowDataPacket & { size: number | string }>(first.socketPath, "SELECT @@innodb_buffer_pool_size AS size");
      expect(Number(pool?.size)).toBe(bufferPoolBytes());
      // LOAD DATA LOCAL allowed (analytics' raw rows), whatever the flavour's default.
      const [infile] = await query<RowDataPacket & { on: number | string }>(first.socketPath, "SELECT @@global.local_infile AS `on`");
      expect(Number(infile?.on)).toBe(1);

      // Leave data behind to check that a restart reuses the data folder.
      const conn = await mysql.createConnection({ socketPath: first.socketPath, user: "root" });
      await conn.query("CREATE DATABASE keyhold_ps_test");
      await conn.query("CREATE TABLE keyhold_ps_test.t (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB");
      await conn.query("INSERT INTO keyhold_ps_test.t VALUES (1, 'kept')");
      await conn.end();
      // And a LOCAL INFILE goes through, as the analytics writer sends it.
      const loader = await mysql.createConnection({ socketPath: first.socketPath, user: "root", flags: ["+LOCAL_FILES"] });
      await loader.query({
        sql: "LOAD DATA LOCAL INFILE 'rows' INTO TABLE keyhold_ps_test.t FIELDS TERMINATED BY '\\t' (id, note)",
        infileStreamFactory: () => Readable.from([Buffer.from("2\tloaded\n3\tloaded too\n")]),
      });
      const [loaded] = await loader.query<RowDataPacket[]>("SELECT id, note FROM keyhold_ps_test.t WHERE id > 1 ORDER BY id");
      await loader.end();
      expect(loaded.map((r) => [r.id, r.note])).toEqual([
        [2, "loaded"],
        [3, "loaded too"],
      ]);
      await query(first.socketPath, "DELETE FROM keyhold_ps_test.t WHERE id > 1");

      const second = await start(projectDir);
      expect(second.owned).toBe(false);
      expect(second.socketPath).toBe(first.socketPath);
      expect(await answers(second.socketPath)).toBe(true);

      const pid = serverPid(projectDir);
      await second.stop(); // not the owner: does nothing
      expect(await answers(first.socketPath)).toBe(true);

      await first.stop();
      await first.stop(); // idempotent
      expect(isAlive(pid)).toBe(false);
      expect(await answers(first.socketPath)).toBe(false);
      expect(existsSync(path.join(projectDir, ".keyhold", "mysql.init"))).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "starts again on the initialised data folder",
    async () => {
      const again = await start(projectDir);
      timings["restart on existing data"] = again.ms;
      expect(again.owned).toBe(true);
      const rows = await query<RowDataPacket & { note: string }>(again.socketPath, "SELECT note FROM keyhold_ps_test.t");
      expect(rows.map((r) => r.note)).toEqual(["kept"]);
      expect(lines.filter((l) => l.startsWith("initialising")).length).toBe(1);
      await again.stop();
      expect(await answers(again.socketPath)).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "never starts two servers when called concurrently",
    async () => {
      const servers = await Promise.all([start(projectDir), start(projectDir), start(projectDir)]);
      expect(servers.filter((s) => s.owned).length).toBe(1);
      expect(new Set(servers.map((s) => s.socketPath)).size).toBe(1);
      for (const s of servers) expect(await answers(s.socketPath)).toBe(true);
      for (const s of servers) await s.stop();
      expect(await answers(servers[0]!.socketPath)).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "cleans up after a crashed server and starts it again",
    async () => {
      const crashed = await start(projectDir);
      expect(crashed.owned).toBe(true);
      const pid = serverPid(projectDir);
      process.kill(pid, "SIGKILL");
      await waitUntil(() => !isAlive(pid), 10_000);
      // The crash left its pid file and socket behind.
      expect(existsSync(path.join(projectDir, ".keyhold", "mysql.pid"))).toBe(true);
      expect(existsSync(crashed.socketPath)).toBe(true);

      const fresh = await start(projectDir);
      expect(fresh.owned).toBe(true);
      expect(serverPid(projectDir)).not.toBe(pid);
      const rows = await query<RowDataPacket & { note: string }>(fresh.socketPath, "SELECT note FROM keyhold_ps_test.t");
      expect(rows.map((r) => r.note)).toEqual(["kept"]);

      await crashed.stop(); // its server is already gone: must not touch the new one
      expect(await answers(fresh.socketPath)).toBe(true);
      await fresh.stop();
      expect(await answers(fresh.socketPath)).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "adopts a running server whose owner process is gone",
    async () => {
      const original = await start(projectDir);
      const pid = serverPid(projectDir);
      // Pretend the process that started it died without stopping it (kill -9).
      writeFileSync(path.join(projectDir, ".keyhold", "mysql.owner"), JSON.stringify({ ownerPid: deadPid(), serverPid: pid }));

      const adopter = await start(projectDir);
      expect(adopter.owned).toBe(true);
      expect(serverPid(projectDir)).toBe(pid); // same server, not restarted
      expect(lines.some((l) => l.startsWith("adopting private"))).toBe(true);

      // Now a third caller joins, since the adopter is alive.
      const joiner = await start(projectDir);
      expect(joiner.owned).toBe(false);

      await adopter.stop();
      await waitUntil(() => !isAlive(pid), 10_000);
      expect(await answers(adopter.socketPath)).toBe(false);
      await original.stop();
    },
    TIMEOUT,
  );

  it(
    "puts the socket in a short folder under the temp dir when the project path is long",
    async () => {
      const base = tempProjectDir("keyhold-ps-long-");
      const longDir = path.join(base, "a-rather-long-folder-name-for-a-project".repeat(3));
      const expectedHash = createHash("sha256").update(longDir).digest("hex").slice(0, 16);
      const server = await start(longDir);
      cleanups.push(() => rmSync(path.join(os.tmpdir(), `keyhold-${expectedHash}`), { recursive: true, force: true }));
      expect(server.owned).toBe(true);
      expect(Buffer.byteLength(server.socketPath)).toBeLessThan(104);
      expect(server.socketPath).toBe(path.join(os.tmpdir(), `keyhold-${expectedHash}`, "mysql.sock"));
      expect(existsSync(path.join(longDir, ".keyhold", "mysql"))).toBe(true);
      expect(await answers(server.socketPath)).toBe(true);
      await server.stop();
      expect(await answers(server.socketPath)).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "starts after a crashed run that left a stale lock, pid file, socket and half-initialised data",
    async () => {
      const dir = tempProjectDir();
      const keyhold = path.join(dir, ".keyhold");
      mkdirSync(path.join(keyhold, "mysql.init", "mysql"), { recursive: true, mode: 0o700 });
      writeFileSync(path.join(keyhold, "mysql.init", "ibdata1"), "torn");
      writeFileSync(path.join(keyhold, "mysql.lock"), `${deadPid()}\n`);
      writeFileSync(path.join(keyhold, "mysql.pid"), `${deadPid()}\n`);
      writeFileSync(path.join(keyhold, "mysql.sock"), "");

      const server = await start(dir);
      expect(server.owned).toBe(true);
      expect(await answers(server.socketPath)).toBe(true);
      expect(existsSync(path.join(keyhold, "mysql.init"))).toBe(false);
      expect(existsSync(path.join(keyhold, "mysql.lock"))).toBe(false); // released once started
      await server.stop();
    },
    TIMEOUT,
  );

  it(
    "fails with the last lines of the server log when the server exits during startup",
    async () => {
      const dir = tempProjectDir();
      // A data folder that looks initialised but has no system tables: the server refuses to start.
      mkdirSync(path.join(dir, ".keyhold", "mysql"), { recursive: true, mode: 0o700 });
      const err = await startPrivateServer({ projectDir: dir, log }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/exited during startup/);
      expect((err as Error).message).toMatch(/Last lines of .*mysql\.log:\n\s+\S/);
      expect(await answers(path.join(dir, ".keyhold", "mysql.sock"))).toBe(false);
    },
    TIMEOUT,
  );

  it("reports timings", () => {
    // Visible with --reporter=verbose or KEYHOLD_TEST_VERBOSE=1.
    if (process.env.KEYHOLD_TEST_VERBOSE) process.stderr.write(`[private-server] timings (ms): ${JSON.stringify(timings)}\n`);
    expect(Object.keys(timings).length).toBe(2);
  });
});

describe("NoDatabaseServerError", () => {
  it("says what to install and how to use an existing server instead", () => {
    const err = new NoDatabaseServerError();
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("NoDatabaseServerError");
    expect(err.message).toContain("apt-get install mariadb-server");
    expect(err.message).toContain("MySQL 8");
    expect(err.message).toContain("DATABASE_URL=mysql://user:pass@host:3306/keyhold");
  });
});

describe("the private server's buffer pool", () => {
  it("is an eighth of the machine's memory in whole 128 MB, from 128 MB to 1 GB", () => {
    const MB = 1024 * 1024;
    expect(bufferPoolBytes(512 * MB)).toBe(128 * MB);
    expect(bufferPoolBytes(2048 * MB)).toBe(256 * MB);
    expect(bufferPoolBytes(3000 * MB)).toBe(256 * MB);
    expect(bufferPoolBytes(4096 * MB + 3)).toBe(512 * MB);
    expect(bufferPoolBytes(24 * 1024 * MB)).toBe(1024 * MB);
  });
});

describe("the private server's command line", () => {
  const paths = {
    projectDir: "/p",
    keyholdDir: "/p/.keyhold",
    dataDir: "/p/.keyhold/mysql",
    initDir: "/p/.keyhold/mysql.init",
    socketPath: "/p/.keyhold/mysql.sock",
    pidFile: "/p/.keyhold/mysql.pid",
    logFile: "/p/.keyhold/mysql.log",
    lockFile: "/p/.keyhold/mysql.lock",
    ownerFile: "/p/.keyhold/mysql.owner",
    shownDataDir: ".keyhold/mysql",
    shownLogFile: ".keyhold/mysql.log",
  };
  it.each([
    { flavor: "mariadb", path: "/usr/sbin/mariadbd", version: [10, 11, 19], label: "MariaDB 10.11" },
    { flavor: "mysql", path: "/usr/sbin/mysqld", version: [8, 0, 36], label: "MySQL 8.0" },
  ] as const)("allows LOAD DATA LOCAL on $label (MySQL 8's default refuses it), reads no option file, listens on no port", (bin) => {
    const args = serverArgs({ bin: { ...bin, version: [...bin.version] }, paths });
    expect(args[0]).toBe("--no-defaults");
    expect(args).toContain("--local-infile=ON");
    expect(args).toContain("--skip-networking");
    expect(args).toContain(`--socket=${paths.socketPath}`);
  });
});
