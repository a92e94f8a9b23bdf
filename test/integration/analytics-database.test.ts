// ANALYTICS_DATABASE_URL: analytics events, their roll-ups, the analytics API and
// the usage charts on a database of their own, while keys, APIs and grants stay
// in the main one. An instance started with it writes and reads there only.
import { afterAll, describe, expect, it } from "vitest";
import { queryUsage } from "../../src/domain/keys/usage-query.js";
import { openDatabase } from "../../src/storage/db.js";
import { useHarness } from "../harness.js";

describe("analytics on a database of its own (ANALYTICS_DATABASE_URL)", () => {
  const h = useHarness();
  let analyticsUrl = "";

  afterAll(async () => {
    if (analyticsUrl === "") return;
    const db = await openDatabase(analyticsUrl);
    await db.pool.query(`DROP DATABASE IF EXISTS \`${new URL(analyticsUrl).pathname.slice(1)}\``);
    await db.close();
  });

  it("events are written there and read from there; the main database gets none", async () => {
    const u = new URL(h.config.databaseUrl ?? "");
    u.pathname = `${u.pathname}_analytics`;
    analyticsUrl = u.toString();
    const other = await h.otherInstance({ ANALYTICS_DATABASE_URL: analyticsUrl });
    const rk = await h.rootKey(["*"]);
    const apiId = (await other.post("/v2/apis.createApi", { name: "analytics-elsewhere" }, rk)).body.data.apiId as string;
    const { key, keyId } = (await other.post("/v2/keys.createKey", { apiId }, rk)).body.data as { key: string; keyId: string };
    expect((await other.post("/v2/keys.verifyKey", { key, tags: ["where=elsewhere"] }, rk)).body.data.code).toBe("VALID");
    expect((await other.post("/v2/ratelimit.limit", { namespace: "elsewhere", identifier: "u1", limit: 5, duration: 60_000 }, rk)).status).toBe(200);
    await other.deps.analytics.flush();

    const count = async (pool: typeof h.db.pool, sql: string, params: unknown[]) => Number(((await pool.query(sql, params))[0] as Array<{ n: number }>)[0]?.n);
    expect(await count(other.deps.analyticsPool, "SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [keyId])).toBe(1);
    expect(await count(other.deps.analyticsPool, "SELECT COUNT(*) AS n FROM analytics_ratelimits WHERE identifier = 'u1'", [])).toBe(1);
    expect(await count(h.db.pool, "SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [keyId])).toBe(0);
    expect(await count(h.db.pool, "SELECT COUNT(*) AS n FROM analytics_ratelimits WHERE identifier = 'u1'", [])).toBe(0);

    // The analytics API of that instance reads the analytics database; an instance without the setting reads the main one.
    const q = { query: `SELECT key_id, tags FROM key_verifications_v1 WHERE key_id = '${keyId}'` };
    expect((await other.post("/v2/analytics.getVerifications", q, rk)).body.data).toEqual([{ key_id: keyId, tags: ["where=elsewhere"] }]);
    expect((await h.post("/v2/analytics.getVerifications", q, rk)).body.data).toEqual([]);
    // The usage charts: the API's key space from the main database, its counts from the analytics one.
    const now = Date.now();
    const points = await queryUsage(
      { main: other.deps.pool, analytics: other.deps.analyticsPool },
      { workspaceId: h.workspaceId, apiId, from: now - 3_600_000, to: now + 60_000, granularity: "hour" },
    );
    expect(points.map((p) => [p.outcome, p.count])).toEqual([["VALID", 1]]);
  });
});
