import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, expectOk, uid } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.multiLimit 200", () => {
  const h = useHarness();
  const multi = async (checks: unknown[], rootKey?: string) => expectOk(await h.post("/v2/ratelimit.multiLimit", checks, rootKey ?? (await admin(h))));
  const single = async (body: Record<string, unknown>) => expectOk(await h.post("/v2/ratelimit.limit", body, await admin(h)));

  it("answers every check in request order, echoing the namespace string; passed when all passed", async () => {
    const nsA = uid("ns");
    const nsB = uid("ns");
    await awayFromWindowEdge(MINUTE);
    const windowEnd = (Math.floor(Date.now() / MINUTE) + 1) * MINUTE;
    const data = await multi([
      { namespace: nsA, identifier: "u1", limit: 3, duration: MINUTE },
      { namespace: nsB, identifier: "u1", limit: 5, duration: MINUTE, cost: 2 },
    ]);
    expect(data).toEqual({
      passed: true,
      limits: [
        { namespace: nsA, identifier: "u1", limit: 3, remaining: 2, reset: windowEnd, passed: true },
        { namespace: nsB, identifier: "u1", limit: 5, remaining: 3, reset: windowEnd, passed: true },
      ],
    });
  });

  it("all or nothing: when one check fails no counter is consumed, and passing entries report their cost given back", async () => {
    const roomy = { namespace: uid("ns"), identifier: "wide", limit: 10, duration: MINUTE };
    const tight = { namespace: uid("ns"), identifier: "narrow", limit: 1, duration: MINUTE };
    await awayFromWindowEdge(MINUTE);
    expect((await single(tight)).success).toBe(true); // tight is now exhausted
    const data = await multi([roomy, tight]);
    expect(data.passed).toBe(false);
    expect(data.limits[0]).toMatchObject({ passed: true, remaining: 10 });
    expect(data.limits[1]).toMatchObject({ passed: false, remaining: 0 });
    // Nothing was taken from the roomy counter.
    expect(await single({ ...roomy, cost: 0 })).toMatchObject({ remaining: 10 });
  });

  it("applies overrides per check and reports overrideId", async () => {
    const namespace = uid("ns");
    await single({ namespace, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 });
    const set = expectOk(await h.post("/v2/ratelimit.setOverride", { namespace, identifier: "team_*", limit: 2, duration: MINUTE }, await admin(h)));
    await awayFromWindowEdge(MINUTE);
    const data = await multi([
      { namespace, identifier: "team_a", limit: 100, duration: MINUTE },
      { namespace, identifier: "solo", limit: 100, duration: MINUTE },
    ]);
    expect(data.limits[0]).toMatchObject({ limit: 2, remaining: 1, overrideId: set.overrideId });
    expect(data.limits[1]).toMatchObject({ limit: 100, remaining: 99 });
    expect(data.limits[1]).not.toHaveProperty("overrideId");
  });

  it("creates missing namespaces and takes 100 checks", async () => {
    const namespace = uid("ns");
    const checks = Array.from({ length: 100 }, (_, i) => ({ namespace, identifier: `id_${i}`, limit: 1, duration: MINUTE }));
    await awayFromWindowEdge(MINUTE);
    const data = await multi(checks);
    expect(data.passed).toBe(true);
    expect(data.limits).toHaveLength(100);
  });

  it("per-namespace grants suffice when every namespace is covered", async () => {
    const a = uid("ns");
    const b = uid("ns");
    await multi([
      { namespace: a, identifier: "s", limit: 1, duration: MINUTE, cost: 0 },
      { namespace: b, identifier: "s", limit: 1, duration: MINUTE, cost: 0 },
    ]);
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name IN (?, ?)", [a, b]);
    const rk = await h.rootKey((rows as Array<{ id: string }>).map((r) => `ratelimit.${r.id}.limit`));
    const data = await multi(
      [
        { namespace: a, identifier: "x", limit: 5, duration: MINUTE },
        { namespace: b, identifier: "x", limit: 5, duration: MINUTE },
      ],
      rk,
    );
    expect(data.passed).toBe(true);
  });
});
