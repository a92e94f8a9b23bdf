// DATABASE_URL with several hosts (the nodes of a Galera cluster): the instance
// uses one, and moves to the next when it cannot be reached, without a restart.
// Each "node" here is a TCP proxy in front of the test database server, refused
// (nothing listens, open connections cut) as a killed node is.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/server/config.js";
import { type Database, openDatabase, parseDatabaseUrl } from "../../src/storage/db.js";
import { isDatabaseUnavailable } from "../../src/storage/sql.js";
import { TcpProxy } from "../faults/tcp-proxy.js";

describe("parseDatabaseUrl", () => {
  it("reads one host, several hosts, IPv6, defaults and a socket", () => {
    expect(parseDatabaseUrl("mysql://u:p%40ss@db:3307/kh")).toEqual({ hosts: [{ host: "db", port: 3307 }], user: "u", password: "p@ss", database: "kh" });
    expect(parseDatabaseUrl("mysql://root@10.0.0.1:3306,10.0.0.2,[::1]:3310/kh").hosts).toEqual([
      { host: "10.0.0.1", port: 3306 },
      { host: "10.0.0.2", port: 3306 },
      { host: "::1", port: 3310 },
    ]);
    expect(parseDatabaseUrl("mariadb://db")).toMatchObject({ user: "root", password: "", database: "keyhold" });
    expect(parseDatabaseUrl("mysql://root@localhost/kh?socketPath=%2Ftmp%2Fm.sock").socketPath).toBe("/tmp/m.sock");
  });

  it("refuses what is not a mysql URL, and the configuration names DATABASE_URL", () => {
    for (const bad of ["db:3306", "mysql://db:99999/x", "mysql://db,:x/y", "mysql://db:port/x"]) expect(() => parseDatabaseUrl(bad), bad).toThrow();
    expect(() => loadConfig({ DATABASE_URL: "mysql://db:notaport/x" })).toThrow(/DATABASE_URL is not a URL/);
    expect(() => loadConfig({ DATABASE_URL: "postgres://db/x" })).toThrow(/DATABASE_URL must start with mysql:\/\/ \(got postgres:\/\/\)/);
    expect(loadConfig({ DATABASE_URL: "mysql://root@db1:3306,db2:3306/kh" }).databaseUrl).toBe("mysql://root@db1:3306,db2:3306/kh");
  });
});

describe("a database at several nodes", () => {
  let one: TcpProxy;
  let two: TcpProxy;
  let db: Database;
  const lines: string[] = [];
  const name = `keyhold_n_${randomBytes(5).toString("hex")}`;

  beforeAll(async () => {
    const direct = inject("mysqlServer");
    ({ proxy: one } = await TcpProxy.inFrontOf(direct));
    ({ proxy: two } = await TcpProxy.inFrontOf(direct));
    // The first node is down when the instance starts: it opens on the second.
    await one.setMode("refuse");
    db = await openDatabase(`mysql://root@127.0.0.1:${one.port},127.0.0.1:${two.port}/${name}`, { connectTimeoutMs: 1_000, queryTimeoutMs: 2_000 }, (l) =>
      lines.push(l),
    );
  });

  afterAll(async () => {
    await one.setMode("forward");
    await two.setMode("forward");
    await db?.pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await db?.close();
    await one.close();
    await two.close();
  });

  /** Runs a statement until it succeeds (at most `tries`); returns the failures met on the way. */
  async function untilServed(tries: number): Promise<unknown[]> {
    const failures: unknown[] = [];
    for (let i = 0; i < tries; i++) {
      try {
        await db.pool.query("SELECT 1");
        await db.pool.execute("SELECT ?", [1]);
        const conn = await db.pool.getConnection();
        conn.release();
        return failures;
      } catch (err) {
        failures.push(err);
      }
    }
    throw new Error(`not served after ${tries} tries: ${failures.map(String).join("; ")}`);
  }

  it("opens on the second node when the first is down, and serves from it", async () => {
    expect(await untilServed(3)).toEqual([]);
    expect(lines.join("\n")).toMatch(/database node 127\.0\.0\.1:\d+ failed .*; using 127\.0\.0\.1:\d+/);
  });

  it("moves back to the first node when the second dies, with at most one failure, which is a 503 (unavailable)", async () => {
    await one.setMode("forward");
    await two.setMode("refuse");
    const failures = await untilServed(3);
    expect(failures.length).toBeLessThanOrEqual(1);
    for (const f of failures) expect(isDatabaseUnavailable(f), String(f)).toBe(true);
    // Served by the first node only: it keeps doing so with the second one down.
    for (let i = 0; i < 20; i++) await db.pool.query("SELECT 1");
    // One move per failed node: to the second at start, back to the first now.
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(`127.0.0.1:${two.port} failed`);
  });

  it("a transaction's connection comes from the live node too", async () => {
    await two.setMode("forward");
    await one.setMode("refuse");
    await untilServed(3);
    const conn = await db.pool.getConnection();
    try {
      await conn.beginTransaction();
      await conn.query("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)");
      await conn.query("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE id = id");
      await conn.commit();
    } finally {
      conn.release();
    }
    expect(((await db.pool.query("SELECT COUNT(*) AS n FROM t"))[0] as Array<{ n: number }>)[0]?.n).toBe(1);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toContain(`127.0.0.1:${one.port} failed`);
  });

  it("when every node is down the statement fails as unavailable, in bounded time", async () => {
    await one.setMode("refuse");
    await two.setMode("refuse");
    const started = Date.now();
    const err = await db.pool.query("SELECT 1").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isDatabaseUnavailable(err), String(err)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    await one.setMode("forward");
    expect(await untilServed(3)).not.toHaveLength(3);
  });
});
