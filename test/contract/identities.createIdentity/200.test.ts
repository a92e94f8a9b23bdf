import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, createApi, createKey, expectOk, getKey, many, verifyKey } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("identities.createIdentity 200", () => {
  const h = useHarness();

  it("returns an identityId; getIdentity reads back meta and the rate limits", async () => {
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.read_identity"]);
    const res = await h.post(
      "/v2/identities.createIdentity",
      { externalId: "user_1", meta: { plan: "pro", n: 1 }, ratelimits: [{ name: "requests", limit: 10, duration: MINUTE }] },
      rk,
    );
    expect(expectOk(res)).toEqual({ identityId: expect.stringMatching(/^id_/) });
    const identityId = res.body.data.identityId;

    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: identityId }, rk));
    expect(got).toEqual({
      id: identityId,
      externalId: "user_1",
      meta: { plan: "pro", n: 1 },
      // autoApply defaults to true (docs/ratelimits.md, "Limits on keys and identities (verifyKey)").
      ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "requests", limit: 10, duration: MINUTE, autoApply: true }],
    });
  });

  it("keeps an explicit autoApply: false", async () => {
    const rk = await admin(h);
    expectOk(
      await h.post("/v2/identities.createIdentity", { externalId: "manual", ratelimits: [{ name: "tokens", limit: 5, duration: 1000, autoApply: false }] }, rk),
    );
    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: "manual" }, rk));
    expect(got.ratelimits).toEqual([expect.objectContaining({ name: "tokens", autoApply: false })]);
  });

  it("omits meta and ratelimits when there are none", async () => {
    const rk = await admin(h);
    const res = await h.post("/v2/identities.createIdentity", { externalId: "bare.user-2", meta: {} }, rk);
    const { identityId } = expectOk(res);
    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: "bare.user-2" }, rk));
    expect(got).toEqual({ id: identityId, externalId: "bare.user-2" });
  });

  it("accepts the maximums: 100 meta properties, 50 rate limits, a 255-character externalId", async () => {
    const meta = Object.fromEntries(many(100, (i) => [`k${i}`, { nested: [i, null, true] }]));
    const ratelimits = many(50, (i) => ({ name: `limit_${i}`, limit: 1, duration: 1000 }));
    const res = await h.post("/v2/identities.createIdentity", { externalId: "e".repeat(255), meta, ratelimits }, await admin(h));
    expectOk(res);
    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: "e".repeat(255) }, await admin(h)));
    expect(got.meta).toEqual(meta);
    expect(got.ratelimits).toHaveLength(50);
  });

  it("an externalId freed by deleteIdentity can be used again", async () => {
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.delete_identity"]);
    const first = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "reuse" }, rk));
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "reuse" }, rk));
    const second = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "reuse" }, rk));
    expect(second.identityId).not.toBe(first.identityId);
  });

  it("externalIds are unique per workspace: another workspace may use the same one", async () => {
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "everywhere" }, await admin(h)));
    const other = await h.rootKey(["identity.*.create_identity"], "identities_other_ws");
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "everywhere" }, other));
  });

  it("a key created with the identity's externalId is linked to it", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "linked", meta: { tier: 1 } }, await admin(h)));
    const { keyId, key } = await createKey(h, await createApi(h), { externalId: "linked" });
    expect((await verifyKey(h, key)).identity).toMatchObject({ id: identityId, externalId: "linked", meta: { tier: 1 } });
    expect(expectOk(await getKey(h, keyId)).identity).toMatchObject({ id: identityId, externalId: "linked" });
  });

  // Seed rule 4: the identity's limit is enforced across all its keys together.
  it("the identity's rate limits are shared by all its keys", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "shared", ratelimits: [{ name: "shared", limit: 2, duration: MINUTE }] }, rk));
    const apiId = await createApi(h);
    const a = await createKey(h, apiId, { externalId: "shared" });
    const b = await createKey(h, apiId, { externalId: "shared" });
    await awayFromWindowEdge(MINUTE);
    expect((await verifyKey(h, a.key)).code).toBe("VALID");
    expect((await verifyKey(h, b.key)).code).toBe("VALID");
    expect(await verifyKey(h, a.key)).toMatchObject({ valid: false, code: "RATE_LIMITED" });
    expect(await verifyKey(h, b.key)).toMatchObject({ valid: false, code: "RATE_LIMITED" });
  });
});
