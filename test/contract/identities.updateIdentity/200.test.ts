import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, createApi, createKey, expectOk, type Json, verifyKey } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("identities.updateIdentity 200", () => {
  const h = useHarness();

  async function create(externalId: string, extra: Record<string, unknown> = {}): Promise<string> {
    return expectOk(await h.post("/v2/identities.createIdentity", { externalId, ...extra }, await admin(h))).identityId;
  }
  const update = async (body: Record<string, unknown>) =>
    expectOk(await h.post("/v2/identities.updateIdentity", body, await h.rootKey(["identity.*.update_identity"])));
  const get = async (identity: string) => expectOk(await h.post("/v2/identities.getIdentity", { identity }, await admin(h)));

  it("meta replaces the whole object; the response is the stored identity", async () => {
    const id = await create("meta_user", { meta: { a: 1, b: 2 } });
    const data = await update({ identity: "meta_user", meta: { c: 3 } });
    expect(data).toEqual({ id, externalId: "meta_user", meta: { c: 3 } });
    expect(await get(id)).toEqual(data);
  });

  it("meta {} clears it; omitted meta keeps it (and the response still shows it)", async () => {
    await create("keep_user", { meta: { keep: true } });
    const kept = await update({ identity: "keep_user", ratelimits: [{ name: "requests", limit: 1, duration: 1000 }] });
    expect(kept.meta).toEqual({ keep: true });
    const cleared = await update({ identity: "keep_user", meta: {} });
    expect(cleared.meta).toBeUndefined();
    expect((await get("keep_user")).meta).toBeUndefined();
  });

  it("ratelimits replace the set by name: existing names keep their id, new ones are added, missing ones removed", async () => {
    const id = await create("rl_user", {
      ratelimits: [
        { name: "stays", limit: 1, duration: 1000 },
        { name: "goes", limit: 2, duration: 2000 },
      ],
    });
    const before = (await get(id)).ratelimits as Json[];
    const staysId = before.find((r) => r.name === "stays").id;
    const data = await update({
      identity: id,
      ratelimits: [
        { name: "stays", limit: 10, duration: 5000, autoApply: false },
        { name: "new_one", limit: 3, duration: 3000 },
      ],
    });
    expect(data.ratelimits).toEqual([
      { id: expect.stringMatching(/^rl_/), name: "new_one", limit: 3, duration: 3000, autoApply: true },
      { id: staysId, name: "stays", limit: 10, duration: 5000, autoApply: false },
    ]);
    expect((await get(id)).ratelimits).toEqual(data.ratelimits);
  });

  it("ratelimits [] removes them all; omitted keeps them", async () => {
    await create("clear_user", { ratelimits: [{ name: "requests", limit: 1, duration: 1000 }] });
    expect((await update({ identity: "clear_user", meta: { x: 1 } })).ratelimits).toHaveLength(1);
    expect((await update({ identity: "clear_user", ratelimits: [] })).ratelimits).toBeUndefined();
  });

  it("a body with only the identity changes nothing and answers the identity", async () => {
    const id = await create("noop_user", { meta: { n: 1 } });
    expect(await update({ identity: "noop_user" })).toEqual({ id, externalId: "noop_user", meta: { n: 1 } });
  });

  it("a per-identity update grant is enough", async () => {
    const id = await create("own_grant");
    const rk = await h.rootKey([`identity.${id}.update_identity`]);
    expect(expectOk(await h.post("/v2/identities.updateIdentity", { identity: "own_grant", meta: { ok: 1 } }, rk)).meta).toEqual({ ok: 1 });
  });

  // The change evicts the keys' records (docs/caching.md): the next verification sees it, even though the key's record was cached.
  it("the keys' very next verification uses the new limits", async () => {
    await create("live_user", { ratelimits: [{ name: "shared", limit: 1, duration: MINUTE }] });
    const { key } = await createKey(h, await createApi(h), { externalId: "live_user" });
    await awayFromWindowEdge(MINUTE);
    expect((await verifyKey(h, key)).code).toBe("VALID");
    expect((await verifyKey(h, key)).code).toBe("RATE_LIMITED");
    await update({ identity: "live_user", ratelimits: [{ name: "shared", limit: 5, duration: MINUTE }] });
    expect((await verifyKey(h, key)).code).toBe("VALID");
    await update({ identity: "live_user", meta: { seen: true }, ratelimits: [] });
    const data = await verifyKey(h, key);
    expect(data.identity.meta).toEqual({ seen: true });
    expect(data.ratelimits ?? []).toEqual([]);
  });
});
