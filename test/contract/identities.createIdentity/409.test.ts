import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk } from "../shared/helpers.js";

describe("identities.createIdentity 409", () => {
  const h = useHarness();

  it("a second identity with a live identity's externalId -> 409 identity_already_exists", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "dup" }, rk));
    const res = await h.post("/v2/identities.createIdentity", { externalId: "dup" }, rk);
    expectError(h, res, 409, "err:svc:data:identity_already_exists", "Identity with externalId 'dup' already exists in this workspace.");
  });

  it("an identity auto-created by createKey's externalId counts too", async () => {
    await createKey(h, await createApi(h), { externalId: "from_key" });
    const res = await h.post("/v2/identities.createIdentity", { externalId: "from_key" }, await admin(h));
    expectError(h, res, 409, "err:svc:data:identity_already_exists");
  });

  it("externalIds are case-sensitive: a different case is not a duplicate", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "CaseUser" }, rk));
    expect((await h.post("/v2/identities.createIdentity", { externalId: "caseuser" }, rk)).status).toBe(200);
  });

  it("concurrent creates of one externalId: exactly one wins, the others get 409", async () => {
    const rk = await admin(h);
    const results = await Promise.all(Array.from({ length: 5 }, () => h.post("/v2/identities.createIdentity", { externalId: "race" }, rk)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(h, r, 409, "err:svc:data:identity_already_exists");
  });
});
