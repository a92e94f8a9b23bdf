import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { keySpaceOf, query, seedVerifications, VERIFY } from "../shared/analytics.js";
import { expectOk } from "../shared/helpers.js";

describe("analytics.getVerifications 200", () => {
  const h = useHarness();

  it("counts the workspace's verifications by outcome, from the raw table and from every roll-up", async () => {
    const rk = await h.rootKey(["apis.*.create_api", "apis.*.create_key", "apis.*.verify_key", "apis.*.read_analytics"], "analytics-200-a");
    const { a, b } = await seedVerifications(h, rk);
    const ks = await keySpaceOf(h, a.apiId);
    const raw = expectOk(
      await query(h, VERIFY, "SELECT outcome, count() AS total, sum(spent_credits) AS spent FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome", rk),
    );
    expect(raw).toEqual([
      { outcome: "USAGE_EXCEEDED", total: 1, spent: 0 },
      { outcome: "VALID", total: 3, spent: 2 },
    ]);
    for (const g of ["minute", "hour", "day", "month"]) {
      const rolled = expectOk(
        await query(h, VERIFY, `SELECT outcome, sum(count) AS total FROM key_verifications_per_${g}_v1 GROUP BY outcome ORDER BY outcome`, rk),
      );
      expect(rolled, g).toEqual([
        { outcome: "USAGE_EXCEEDED", total: 1 },
        { outcome: "VALID", total: 3 },
      ]);
    }
    // The SDK's example shapes: countIf, uniq, a time bucket, a filter on the key space, tags as arrays.
    const perKey = expectOk(
      await query(
        h,
        VERIFY,
        `SELECT key_id, countIf(outcome = 'VALID') AS valid, uniq(outcome) AS outcomes, toStartOfHour(time) AS hour FROM key_verifications_v1 WHERE key_space_id = '${ks}' AND time >= now() - INTERVAL 1 DAY GROUP BY key_id, hour`,
        rk,
      ),
    );
    expect(perKey).toEqual([{ key_id: a.keyId, valid: 2, outcomes: 2, hour: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:00:00$/) }]);
    const tags = expectOk(await query(h, VERIFY, `SELECT tags FROM key_verifications_v1 WHERE key_id = '${a.keyId}' ORDER BY time`, rk));
    expect(tags.map((r: { tags: string[] }) => r.tags[0])).toEqual(["path=/a", "path=/a", "path=/a"]);
    expect(tags[0].tags).toHaveLength(2);
    // CTEs, subqueries and UNION.
    const union = expectOk(
      await query(
        h,
        VERIFY,
        `WITH mine AS (SELECT key_id FROM key_verifications_v1 WHERE key_id IN (SELECT key_id FROM key_verifications_v1 WHERE outcome = 'USAGE_EXCEEDED')) SELECT 'a' AS api, count() AS n FROM mine UNION ALL SELECT 'b' AS api, count() AS n FROM key_verifications_v1 WHERE key_id = '${b.keyId}'`,
        rk,
      ),
    );
    expect(union).toEqual([
      { api: "a", n: 3 },
      { api: "b", n: 1 },
    ]);
  });

  it("a column named tags is an array only when it holds the stored kind (strings); anything else comes back as written", async () => {
    const rk = await h.rootKey(["apis.*.read_analytics"], "analytics-200-tags");
    // JSON.parse("[1e999]") is [Infinity], which no JSON answer can hold: it stays text.
    const rows = expectOk(await query(h, VERIFY, "SELECT '[1e999]' AS tags, '[\"a\", \"b\"]' AS other, '[\"x\"]' AS tags2", rk));
    expect(rows).toEqual([{ tags: "[1e999]", other: '["a", "b"]', tags2: '["x"]' }]);
  });

  it("reads only the caller's workspace, and with an API-scoped grant only that API", async () => {
    const rkA = await h.rootKey(["apis.*.create_api", "apis.*.create_key", "apis.*.verify_key", "apis.*.read_analytics"], "analytics-200-b");
    const rkOther = await h.rootKey(["apis.*.create_api", "apis.*.create_key", "apis.*.verify_key", "apis.*.read_analytics"], "analytics-200-c");
    const mine = await seedVerifications(h, rkA);
    const theirs = await seedVerifications(h, rkOther);
    const keys = async (rk: string) =>
      expectOk(await query(h, VERIFY, "SELECT key_id, count() AS n FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC, key_id", rk)).map(
        (r: { key_id: string }) => r.key_id,
      );
    expect(await keys(rkA)).toEqual([mine.a.keyId, mine.b.keyId]);
    expect(await keys(rkOther)).toEqual([theirs.a.keyId, theirs.b.keyId]);
    // Naming the other workspace's ids finds nothing.
    const named = expectOk(
      await query(h, VERIFY, `SELECT count() AS n FROM key_verifications_v1 WHERE key_id = '${theirs.a.keyId}' OR workspace_id <> ''`, rkA),
    );
    expect(named).toEqual([{ n: 4 }]);
    const scoped = await h.rootKey([`apis.${mine.b.apiId}.read_analytics`], "analytics-200-b");
    expect(await keys(scoped)).toEqual([mine.b.keyId]);
    const perDay = expectOk(await query(h, VERIFY, "SELECT key_id, sum(count) AS n FROM key_verifications_per_day_v1 GROUP BY key_id", scoped));
    expect(perDay).toEqual([{ key_id: mine.b.keyId, n: 1 }]);
  });
});
