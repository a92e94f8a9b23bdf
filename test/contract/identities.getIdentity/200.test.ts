import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk } from "../shared/helpers.js";

describe("identities.getIdentity 200", () => {
  const h = useHarness();

  async function create(externalId: string, extra: Record<string, unknown> = {}): Promise<string> {
    return expectOk(await h.post("/v2/identities.createIdentity", { externalId, ...extra }, await admin(h))).identityId;
  }

  it("finds an identity by id and by externalId, with the same answer", async () => {
    const id = await create("acct_1", {
      meta: { a: 1 },
      ratelimits: [
        { name: "b_limit", limit: 2, duration: 2000 },
        { name: "a_limit", limit: 1, duration: 1000 },
      ],
    });
    const rk = await h.rootKey(["identity.*.read_identity"]);
    const byId = expectOk(await h.post("/v2/identities.getIdentity", { identity: id }, rk));
    const byExternal = expectOk(await h.post("/v2/identities.getIdentity", { identity: "acct_1" }, rk));
    expect(byId).toEqual(byExternal);
    expect(byId).toEqual({
      id,
      externalId: "acct_1",
      meta: { a: 1 },
      ratelimits: [
        { id: expect.stringMatching(/^rl_/), name: "a_limit", limit: 1, duration: 1000, autoApply: true },
        { id: expect.stringMatching(/^rl_/), name: "b_limit", limit: 2, duration: 2000, autoApply: true },
      ],
    });
  });

  it("a read grant for this one identity is enough", async () => {
    const id = await create("acct_2");
    const rk = await h.rootKey([`identity.${id}.read_identity`]);
    expect(expectOk(await h.post("/v2/identities.getIdentity", { identity: "acct_2" }, rk)).id).toBe(id);
  });

  it("an id match wins over an externalId that looks like another identity's id", async () => {
    const first = await create("first");
    const second = await create(first); // externalId = the first identity's id
    const rk = await admin(h);
    expect(expectOk(await h.post("/v2/identities.getIdentity", { identity: first }, rk)).id).toBe(first);
    expect(expectOk(await h.post("/v2/identities.getIdentity", { identity: second }, rk)).externalId).toBe(first);
  });

  it("meta comes back exactly as stored, key order included", async () => {
    const meta = { z: 1, a: { y: [1, "two", null, false], b: 0.5 }, m: "" };
    await create("ordered", { meta });
    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: "ordered" }, await admin(h)));
    expect(JSON.stringify(got.meta)).toBe(JSON.stringify(meta));
  });
});
