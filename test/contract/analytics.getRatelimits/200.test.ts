import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { query, RATELIMITS } from "../shared/analytics.js";
import { expectOk } from "../shared/helpers.js";

describe("analytics.getRatelimits 200", () => {
  const h = useHarness();

  const limit = async (rk: string, namespace: string, identifier: string) =>
    expectOk(await h.post("/v2/ratelimit.limit", { namespace, identifier, limit: 2, duration: 60_000 }, rk));

  it("counts checks by identifier from the raw table and the roll-ups; a namespace-scoped grant sees its namespace only", async () => {
    const rk = await h.rootKey(["ratelimit.*.limit", "ratelimit.*.create_namespace", "ratelimit.*.read_analytics"], "analytics-rl-a");
    const other = await h.rootKey(["ratelimit.*.limit", "ratelimit.*.create_namespace", "ratelimit.*.read_analytics"], "analytics-rl-b");
    for (let i = 0; i < 3; i++) await limit(rk, "api-calls", "user-1");
    await limit(rk, "logins", "user-2");
    await limit(other, "api-calls", "user-1");
    await h.deps.analytics.flush();
    const byIdentifier = expectOk(
      await query(
        h,
        RATELIMITS,
        "SELECT identifier, countIf(passed = 1) AS passed, countIf(passed = 0) AS refused FROM ratelimits_v1 GROUP BY identifier ORDER BY identifier",
        rk,
      ),
    );
    expect(byIdentifier).toEqual([
      { identifier: "user-1", passed: 2, refused: 1 },
      { identifier: "user-2", passed: 1, refused: 0 },
    ]);
    for (const g of ["minute", "hour", "day", "month"]) {
      const rolled = expectOk(await query(h, RATELIMITS, `SELECT sum(passed) AS passed, sum(total) AS total FROM ratelimits_per_${g}_v1`, rk));
      expect(rolled, g).toEqual([{ passed: 3, total: 4 }]);
    }
    const [ns] = (await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = 'logins'"))[0] as Array<{ id: string }>;
    const scoped = await h.rootKey([`ratelimit.${ns?.id}.read_analytics`], "analytics-rl-a");
    expect(expectOk(await query(h, RATELIMITS, "SELECT identifier, namespace_id FROM ratelimits_v1", scoped))).toEqual([
      { identifier: "user-2", namespace_id: ns?.id },
    ]);
  });
});
