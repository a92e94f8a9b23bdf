// prepareSession with ESCAPING_SAFE, on a server session put in the one sql_mode
// where mysql2's client-side escaping would let a value out of its string.
import mysql from "mysql2";
import { describe, expect, inject, it } from "vitest";
import { ESCAPING_SAFE, prepareSession, type SessionConnection } from "./db.js";

describe("session settings of every pooled connection", () => {
  it("drop NO_BACKSLASH_ESCAPES, so an escaped quote stays inside its string", async () => {
    const url = new URL(inject("mysqlServer"));
    const socketPath = url.searchParams.get("socketPath") ?? undefined;
    const conn = mysql.createConnection({
      user: decodeURIComponent(url.username) || "root",
      password: decodeURIComponent(url.password),
      ...(socketPath === undefined ? { host: url.hostname, port: Number(url.port || 3306) } : { socketPath }),
    });
    const q = <T>(sql: string, values?: unknown[]) =>
      new Promise<T>((resolve, reject) => conn.query(sql, values, (err, rows) => (err ? reject(err) : resolve(rows as T))));
    try {
      await q("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES')");
      const value = "x\\\\'; SELECT 'injected";
      // Without the setting the value ends its string early: the text after it is read as SQL.
      await expect(q("SELECT ? AS v", [value])).rejects.toThrow();
      prepareSession(conn as unknown as SessionConnection, [ESCAPING_SAFE]);
      expect(String((await q<Array<{ m: string }>>("SELECT @@SESSION.sql_mode AS m"))[0]?.m)).not.toContain("NO_BACKSLASH_ESCAPES");
      expect(await q("SELECT ? AS v", [value])).toEqual([{ v: value }]);
    } finally {
      conn.end();
    }
  });
});
