// Six rules for rate limits shared through an identity, one test each, plus the
// exactness and window roll-over figures of the identities/ratelimit issue.
import { describe, expect, it } from "vitest";
import { api, key, midMinute, verify, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

describe("seed rules for shared identity limits", () => {
  const h = useHarness();
  const at = <T>(ms: number, fn: () => Promise<T>) => withClock(h, ms, fn);
  const mid = midMinute;

  it("rule 1: without an identity, limits apply per key (N keys of L each allow N x L)", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const keys = await Promise.all([1, 2, 3].map(() => key(h, rk, apiId, { ratelimits: [{ name: "per_second", limit: 2, duration: 60_000 }] })));
    await at(mid(), async () => {
      const codes = await Promise.all(keys.flatMap((k) => [1, 2, 3].map(() => verify(h, rk, k.key))));
      expect(codes.filter((c) => c.code === "VALID")).toHaveLength(6);
      expect(codes.filter((c) => c.code === "RATE_LIMITED")).toHaveLength(3);
    });
  });

  it("rule 2: an identity has an externalId and a list of rate limits", async () => {
    const rk = await h.rootKey(["*"]);
    const created = await h.post(
      "/v2/identities.createIdentity",
      { externalId: "rule2_user", ratelimits: [{ name: "tokens", limit: 5, duration: 60_000 }] },
      rk,
    );
    expect(created.status, created.text).toBe(200);
    const got = await h.post("/v2/identities.getIdentity", { identity: "rule2_user" }, rk);
    expect(got.body.data).toMatchObject({ externalId: "rule2_user", ratelimits: [{ name: "tokens", limit: 5, duration: 60_000, autoApply: true }] });
  });

  it("rule 3: a key created with an identity's externalId is linked to that identity", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const id = (await h.post("/v2/identities.createIdentity", { externalId: "rule3_user" }, rk)).body.data.identityId;
    const k = await key(h, rk, apiId, { externalId: "rule3_user" });
    expect((await verify(h, rk, k.key)).identity).toMatchObject({ id, externalId: "rule3_user" });
  });

  it("rule 4: the identity's limit is enforced across all of its keys together (two keys, 10 per minute, exactly 10 VALID)", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await h.post("/v2/identities.createIdentity", { externalId: "rule4_user", ratelimits: [{ name: "shared", limit: 10, duration: 60_000 }] }, rk);
    const a = await key(h, rk, apiId, { externalId: "rule4_user" });
    const b = await key(h, rk, apiId, { externalId: "rule4_user" });
    await at(mid(), async () => {
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => verify(h, rk, i % 2 === 0 ? a.key : b.key)));
      expect(results.filter((r) => r.code === "VALID")).toHaveLength(10);
    });
  });

  it("rule 5: when the shared limit is exceeded, data.valid is false and data.code is RATE_LIMITED", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await h.post("/v2/identities.createIdentity", { externalId: "rule5_user", ratelimits: [{ name: "shared", limit: 1, duration: 60_000 }] }, rk);
    const a = await key(h, rk, apiId, { externalId: "rule5_user" });
    const b = await key(h, rk, apiId, { externalId: "rule5_user" });
    await at(mid(), async () => {
      expect((await verify(h, rk, a.key)).code).toBe("VALID");
      const denied = await verify(h, rk, b.key);
      expect(denied).toMatchObject({ valid: false, code: "RATE_LIMITED" });
      expect(denied.ratelimits).toEqual([expect.objectContaining({ name: "shared", exceeded: true, remaining: 0 })]);
    });
  });

  it("rule 6: a verification may name limits with a cost; if any named limit is exceeded it fails and consumes nothing", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await h.post(
      "/v2/identities.createIdentity",
      { externalId: "rule6_user", ratelimits: [{ name: "tokens", limit: 10, duration: 60_000, autoApply: false }] },
      rk,
    );
    const k = await key(h, rk, apiId, { externalId: "rule6_user", ratelimits: [{ name: "calls", limit: 100, duration: 60_000, autoApply: false }] });
    await at(mid(), async () => {
      const ok = await verify(h, rk, k.key, {
        ratelimits: [
          { name: "tokens", cost: 7 },
          { name: "calls", cost: 1 },
        ],
      });
      expect(ok.code).toBe("VALID");
      expect(ok.ratelimits).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "tokens", remaining: 3 }), expect.objectContaining({ name: "calls", remaining: 99 })]),
      );
      const refused = await verify(h, rk, k.key, {
        ratelimits: [
          { name: "tokens", cost: 7 },
          { name: "calls", cost: 1 },
        ],
      });
      expect(refused).toMatchObject({ valid: false, code: "RATE_LIMITED" });
      // All or nothing: "calls" was not consumed by the refused verification.
      const probe = await verify(h, rk, k.key, { ratelimits: [{ name: "calls", cost: 0 }] });
      expect(probe.ratelimits).toEqual([expect.objectContaining({ name: "calls", remaining: 99 })]);
    });
  });
});

describe("ratelimit.limit exactness and windows", () => {
  const h = useHarness();

  it("100 parallel ratelimit.limit calls against 20 give exactly 20 successes", async () => {
    const rk = await h.rootKey(["*"]);
    await withClock(h, midMinute(), async () => {
      const body = { namespace: "exact", identifier: "user_1", limit: 20, duration: 60_000 };
      const results = await Promise.all(Array.from({ length: 100 }, () => h.post("/v2/ratelimit.limit", body, rk)));
      expect(results.every((r) => r.status === 200)).toBe(true);
      expect(results.filter((r) => r.body.data.success)).toHaveLength(20);
    });
  });

  it("a short window rolls over: the previous window weighs in, then fades out", async () => {
    const rk = await h.rootKey(["*"]);
    const clock = h.deps.clock;
    let now = Math.floor(Date.now() / 1000) * 1000 + 100_000; // a window start, in the future
    (h.deps as { clock: { now(): number } }).clock = { now: () => now };
    const body = { namespace: "rollover", identifier: "u", limit: 4, duration: 1000 };
    const limit = async () => (await h.post("/v2/ratelimit.limit", body, rk)).body.data;
    try {
      for (let i = 0; i < 4; i++) expect((await limit()).success).toBe(true);
      expect((await limit()).success).toBe(false);
      // Half-way through the next window the previous 4 count as trunc(4 x 0.5) = 2.
      now += 1500;
      expect(await limit()).toMatchObject({ success: true, remaining: 1 });
      expect(await limit()).toMatchObject({ success: true, remaining: 0 });
      expect((await limit()).success).toBe(false);
      // Two windows later nothing is left of them.
      now += 2000;
      expect(await limit()).toMatchObject({ success: true, remaining: 3 });
    } finally {
      (h.deps as { clock: unknown }).clock = clock;
    }
  });
});
