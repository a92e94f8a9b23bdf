// When the invalidation log cannot be read, other instances' changes could be
// missed: the instance stops serving cached records (every read goes to the
// database) and says so in its log, and resumes caching once the log is back.
import mysql from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { Invalidations } from "../../src/cache/invalidation.js";
import { useHarness } from "../harness.js";

describe("invalidation log outage", () => {
  const h = useHarness();

  it("goes stale after a failed poll, logs it, and recovers when the log is readable again", async () => {
    const broken = mysql.createPool({ host: "127.0.0.1", port: 1, user: "root", connectTimeout: 500 });
    let pool = h.db.pool;
    // Every call goes to whichever pool is current, so the test can cut the database off and restore it.
    const switching = new Proxy({}, { get: (_t, prop) => (pool as unknown as Record<string | symbol, unknown>)[prop] }) as typeof pool;
    const logged: string[] = [];
    const states: boolean[] = [];
    const log = {
      info: (_o: unknown, m?: string) => logged.push(`info ${m}`),
      warn: (_o: unknown, m?: string) => logged.push(`warn ${m}`),
      error() {},
      debug() {},
    };
    const inv = new Invalidations(
      switching,
      () => undefined,
      log,
      (stale) => states.push(stale),
      0,
    );
    try {
      await inv.poll();
      expect(inv.stale).toBe(false);
      pool = broken as unknown as typeof pool;
      await inv.poll();
      expect(inv.stale).toBe(true);
      expect(states).toEqual([true]);
      expect(logged.some((l) => l.startsWith("warn") && l.includes("from the database"))).toBe(true);
      pool = h.db.pool;
      await inv.poll();
      expect(inv.stale).toBe(false);
      expect(states).toEqual([true, false]);
      expect(logged.some((l) => l.startsWith("info") && l.includes("resumed"))).toBe(true);
    } finally {
      await broken.end().catch(() => undefined);
    }
  });

  it("a stale cache serves nothing: each verification reads the database", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = (await h.post("/v2/apis.createApi", { name: "outage" }, rk)).body.data.apiId;
    const k = (await h.post("/v2/keys.createKey", { apiId }, rk)).body.data;
    await h.post("/v2/keys.verifyKey", { key: k.key }, rk);
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    expect(await h.countQueries(async () => void (await h.post("/v2/keys.verifyKey", { key: k.key }, rk)))).toBe(0);
    h.deps.keyCache.bypass = true;
    h.deps.rootKeyCache.bypass = true;
    try {
      expect(await h.countQueries(async () => void (await h.post("/v2/keys.verifyKey", { key: k.key }, rk)))).toBeGreaterThan(0);
    } finally {
      h.deps.keyCache.bypass = false;
      h.deps.rootKeyCache.bypass = false;
    }
  });
});

describe("invalidation rows that commit out of order", () => {
  const h = useHarness();

  it("a row whose pk is below one already read is still applied", async () => {
    const evicted: string[] = [];
    const log = { info() {}, warn() {}, error() {}, debug() {} };
    const inv = new Invalidations(h.db.pool, (_kind, id) => evicted.push(id), log);
    await h.db.pool.query("INSERT INTO cache_invalidations (pk, kind, cache_key, created_at_m) VALUES (1000, 'key', 'late_first', ?)", [Date.now()]);
    await inv.poll();
    expect(evicted).toContain("late_first");
    // A transaction that took pk 900 earlier commits only now.
    await h.db.pool.query("INSERT INTO cache_invalidations (pk, kind, cache_key, created_at_m) VALUES (900, 'key', 'late_second', ?)", [Date.now()]);
    await inv.poll();
    expect(evicted).toContain("late_second");
    // Each row is applied once, however often it is read again.
    await inv.poll();
    expect(evicted.filter((x) => x === "late_first")).toHaveLength(1);
  });
});
