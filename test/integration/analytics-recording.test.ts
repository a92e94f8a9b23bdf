// Analytics events from verifications and rate-limit checks to the tables the
// analytics API reads: one raw row per event with what the issue lists (request
// id, key space, identity, external id, outcome, tags, spent credits, region),
// the four roll-ups summing the same events, nothing written on the hot path
// itself, and events kept through a database outage. Read straight from the
// tables, so these tests do not depend on the query compiler.
import { describe, expect, it } from "vitest";
import { api, key, verify, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

type Row = Record<string, unknown>;

describe("analytics recording", () => {
  const h = useHarness();
  const q = async (sql: string, params: unknown[] = []): Promise<Row[]> => (await h.db.pool.query(sql, params))[0] as Row[];
  const keySpaceOf = async (apiId: string) => String((await q("SELECT key_auth_id FROM apis WHERE id = ?", [apiId]))[0]?.key_auth_id);

  it("a verification is one raw row with its request id, key space, identity, tags, spent credits and region", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { externalId: "user_analytics_1", credits: { remaining: 10 } });
    const at = Date.UTC(2026, 10, 20, 13, 45, 12, 345);
    const res = await withClock(h, at, () => h.post("/v2/keys.verifyKey", { key: k.key, tags: ["path=/v1/a", "region=eu"], credits: { cost: 3 } }, rk));
    expect(res.body.data.code).toBe("VALID");
    await h.deps.analytics.flush();
    const rows = await q("SELECT * FROM analytics_verifications WHERE key_id = ?", [k.keyId]);
    expect(rows).toHaveLength(1);
    const identityId = String((await q("SELECT id FROM identities WHERE external_id = ?", ["user_analytics_1"]))[0]?.id);
    expect(rows[0]).toMatchObject({
      request_id: res.body.meta.requestId,
      time: "2026-11-20 13:45:12.345",
      workspace_id: h.workspaceId,
      key_space_id: await keySpaceOf(apiId),
      identity_id: identityId,
      external_id: "user_analytics_1",
      outcome: "VALID",
      region: "local",
      spent_credits: 3,
    });
    expect(JSON.parse(String(rows[0]?.tags))).toEqual(["path=/v1/a", "region=eu"]);
    // The key itself is in no column of the row.
    expect(JSON.stringify(rows)).not.toContain(k.key);
  });

  it("the roll-ups sum the raw events per minute, hour, day and month, by key, outcome and tags", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 2 } });
    const t0 = Date.UTC(2026, 9, 31, 23, 59, 10); // the last minute of October (UTC)
    const codes: string[] = [];
    await withClock(h, t0, async () => {
      for (const tags of [["a"], ["a"], ["b"]]) codes.push((await verify(h, rk, k.key, { tags })).code);
    });
    await withClock(h, t0 + 60_000, async () => {
      codes.push((await verify(h, rk, k.key, { tags: ["a"] })).code);
    });
    expect(codes).toEqual(["VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    await h.deps.analytics.flush();
    const rollup = async (g: string) =>
      (
        await q(
          `SELECT \`time\`, outcome, tags, count, spent_credits FROM analytics_verifications_per_${g} WHERE key_id = ? ORDER BY \`time\`, outcome, tags`,
          [k.keyId],
        )
      ).map((r) => [String(r.time), r.outcome, r.tags, Number(r.count), Number(r.spent_credits)]);
    expect(await rollup("minute")).toEqual([
      ["2026-10-31 23:59:00", "USAGE_EXCEEDED", '["b"]', 1, 0],
      ["2026-10-31 23:59:00", "VALID", '["a"]', 2, 2],
      ["2026-11-01 00:00:00", "USAGE_EXCEEDED", '["a"]', 1, 0],
    ]);
    expect(await rollup("hour")).toEqual([
      ["2026-10-31 23:00:00", "USAGE_EXCEEDED", '["b"]', 1, 0],
      ["2026-10-31 23:00:00", "VALID", '["a"]', 2, 2],
      ["2026-11-01 00:00:00", "USAGE_EXCEEDED", '["a"]', 1, 0],
    ]);
    expect(await rollup("month")).toEqual([
      ["2026-10-01 00:00:00", "USAGE_EXCEEDED", '["b"]', 1, 0],
      ["2026-10-01 00:00:00", "VALID", '["a"]', 2, 2],
      ["2026-11-01 00:00:00", "USAGE_EXCEEDED", '["a"]', 1, 0],
    ]);
    // Two flushes into the same buckets add up rather than overwrite.
    await withClock(h, t0 + 5_000, () => verify(h, rk, k.key, { tags: ["a"] }));
    await h.deps.analytics.flush();
    expect((await rollup("day")).find((r) => r[0] === "2026-10-31 00:00:00" && r[1] === "USAGE_EXCEEDED" && r[2] === '["a"]')).toEqual([
      "2026-10-31 00:00:00",
      "USAGE_EXCEEDED",
      '["a"]',
      1,
      0,
    ]);
    const raw = await q("SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [k.keyId]);
    const summed = await q("SELECT SUM(count) AS n FROM analytics_verifications_per_month WHERE key_id = ?", [k.keyId]);
    expect(Number(summed[0]?.n)).toBe(Number(raw[0]?.n));
    expect(Number(raw[0]?.n)).toBe(5);
  });

  // The batch's SQL is written as text (storage/analytics.ts): values with quotes,
  // backslashes, question marks and other scripts must land exactly as sent.
  it("tags and identifiers with quotes, backslashes, question marks and non-ASCII land exactly as sent", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    const tags = ["it's", "back\\slash", "q?uery=1", "ü ñ 日本", '"quoted"', "x'); DROP TABLE `keys`; --"];
    expect((await verify(h, rk, k.key, { tags })).code).toBe("VALID");
    const identifier = "o'neil?\\ 'x";
    expect((await h.post("/v2/ratelimit.limit", { namespace: "odd-ns", identifier, limit: 5, duration: 60_000 }, rk)).status).toBe(200);
    await h.deps.analytics.flush();
    const [row] = await q("SELECT tags FROM analytics_verifications WHERE key_id = ?", [k.keyId]);
    expect(JSON.parse(String(row?.tags))).toEqual(tags);
    const [hour] = await q("SELECT tags FROM analytics_verifications_per_hour WHERE key_id = ?", [k.keyId]);
    expect(JSON.parse(String(hour?.tags))).toEqual(tags);
    expect(await q("SELECT identifier FROM analytics_ratelimits WHERE identifier = ?", [identifier])).toEqual([{ identifier }]);
    expect(await q("SELECT identifier, total FROM analytics_ratelimits_per_day WHERE identifier = ?", [identifier])).toEqual([{ identifier, total: 1 }]);
  });

  it("NOT_FOUND is recorded for the workspace with no key or key space", async () => {
    const rk = await h.rootKey(["*"]);
    const res = await h.post("/v2/keys.verifyKey", { key: "no_such_key_for_analytics_0001", tags: ["nf"] }, rk);
    expect(res.body.data.code).toBe("NOT_FOUND");
    await h.deps.analytics.flush();
    const rows = await q("SELECT * FROM analytics_verifications WHERE request_id = ?", [res.body.meta.requestId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ workspace_id: h.workspaceId, key_space_id: "", key_id: "", identity_id: "", outcome: "NOT_FOUND", tags: '["nf"]' });
  });

  it("ratelimit.limit and multiLimit record one event per check, with the namespace id and whether it passed", async () => {
    const rk = await h.rootKey(["*"]);
    const at = Date.UTC(2026, 10, 21, 8, 0, 30);
    const first = await withClock(h, at, () =>
      h.post("/v2/ratelimit.limit", { namespace: "analytics-ns", identifier: "user-1", limit: 1, duration: 60_000 }, rk),
    );
    const second = await withClock(h, at + 1_000, () =>
      h.post(
        "/v2/ratelimit.multiLimit",
        [
          { namespace: "analytics-ns", identifier: "user-1", limit: 1, duration: 60_000 },
          { namespace: "analytics-ns", identifier: "user-2", limit: 5, duration: 60_000 },
        ],
        rk,
      ),
    );
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    await h.deps.analytics.flush();
    const nsId = String((await q("SELECT id FROM ratelimit_namespaces WHERE workspace_id = ? AND name = 'analytics-ns'", [h.workspaceId]))[0]?.id);
    const raw = await q("SELECT request_id, identifier, passed FROM analytics_ratelimits WHERE namespace_id = ? ORDER BY pk", [nsId]);
    expect(raw).toEqual([
      { request_id: first.body.meta.requestId, identifier: "user-1", passed: 1 },
      { request_id: second.body.meta.requestId, identifier: "user-1", passed: 0 },
      // As multiLimit answered it: user-2's own check passed (nothing was consumed, the batch being refused as a whole).
      { request_id: second.body.meta.requestId, identifier: "user-2", passed: 1 },
    ]);
    const minute = await q("SELECT `time`, identifier, passed, total FROM analytics_ratelimits_per_minute WHERE namespace_id = ? ORDER BY identifier", [nsId]);
    expect(minute.map((r) => [String(r.time), r.identifier, Number(r.passed), Number(r.total)])).toEqual([
      ["2026-11-21 08:00:00", "user-1", 1, 2],
      ["2026-11-21 08:00:00", "user-2", 1, 1],
    ]);
  });

  it("a hot verification sends no statement for its event; the timer writes it", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    await verify(h, rk, k.key); // caches the key
    await h.deps.usage.flush();
    await h.deps.rootKeyUsage.flush();
    let code = "";
    const n = await h.countQueries(async () => {
      code = (await verify(h, rk, k.key)).code;
    });
    expect(code).toBe("VALID");
    expect(n).toBe(0);
    await h.deps.analytics.flush();
    expect(Number((await q("SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [k.keyId]))[0]?.n)).toBe(2);
  });

  it("events wait through a database outage and are written once it is back, once each", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    await verify(h, rk, k.key);
    await h.deps.analytics.flush();
    // The roll-up's table gone: the batch (raw rows and roll-ups in one transaction) fails as a whole.
    await h.db.pool.query("RENAME TABLE analytics_verifications_per_month TO analytics_verifications_per_month_away");
    try {
      await verify(h, rk, k.key);
      await verify(h, rk, k.key);
      await h.deps.analytics.flush();
      expect(h.deps.analytics.pendingRows).toBe(2);
      expect(Number((await q("SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [k.keyId]))[0]?.n)).toBe(1);
      const metrics = (await h.app.inject({ method: "GET", url: "/metrics" })).body;
      expect(metrics).toMatch(/^keyhold_analytics_pending_events 2$/m);
      expect(metrics).toMatch(/^keyhold_analytics_dropped_total 0$/m);
    } finally {
      await h.db.pool.query("RENAME TABLE analytics_verifications_per_month_away TO analytics_verifications_per_month");
    }
    await h.deps.analytics.flush();
    expect(h.deps.analytics.pendingRows).toBe(0);
    expect(Number((await q("SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_id = ?", [k.keyId]))[0]?.n)).toBe(3);
    expect(Number((await q("SELECT SUM(count) AS n FROM analytics_verifications_per_month WHERE key_id = ?", [k.keyId]))[0]?.n)).toBe(3);
  });
});
