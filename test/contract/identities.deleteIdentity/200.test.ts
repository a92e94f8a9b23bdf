import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, createApi, createKey, expectOk, getKey, verifyKey } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("identities.deleteIdentity 200", () => {
  const h = useHarness();

  it("answers data {} by id and by externalId", async () => {
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.delete_identity"]);
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "by_id" }, rk));
    expect(expectOk(await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk))).toEqual({});
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "by_external" }, rk));
    expect(expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "by_external" }, rk))).toEqual({});
  });

  it("a per-identity delete grant is enough", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "own" }, await admin(h)));
    const rk = await h.rootKey([`identity.${identityId}.delete_identity`]);
    expect(expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "own" }, rk))).toEqual({});
  });

  // Deleting an identity evicts its keys' cached records (docs/caching.md): linked
  // keys keep working but lose the identity and its limits at once.
  it("linked keys keep verifying, without the identity or its limits, from the very next request", async () => {
    const rk = await admin(h);
    const { identityId } = expectOk(
      await h.post("/v2/identities.createIdentity", { externalId: "owner", ratelimits: [{ name: "shared", limit: 1, duration: MINUTE }] }, rk),
    );
    const { keyId, key } = await createKey(h, await createApi(h), { externalId: "owner" });
    await awayFromWindowEdge(MINUTE);
    expect(await verifyKey(h, key)).toMatchObject({ code: "VALID", identity: { id: identityId } });
    expect((await verifyKey(h, key)).code).toBe("RATE_LIMITED");

    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk));
    const after = await verifyKey(h, key);
    expect(after.code).toBe("VALID");
    expect(after.identity).toBeUndefined();
    expect(expectOk(await getKey(h, keyId)).identity).toBeUndefined();

    // A new identity with the same externalId does not re-link the old key.
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "owner" }, rk));
    expect((await verifyKey(h, key)).identity).toBeUndefined();
  });

  it("one externalId may be created and deleted many times", async () => {
    const rk = await admin(h);
    for (let i = 0; i < 3; i++) {
      expectOk(await h.post("/v2/identities.createIdentity", { externalId: "cycle" }, rk));
      expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "cycle" }, rk));
    }
  });
});
