import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk, foreignAdmin, listedKeyIds, seedRole, uid } from "../shared/helpers.js";

describe("keys.createKey 404", () => {
  const h = useHarness();

  it.each([
    ["an unknown apiId", "api_doesnotexist0000"],
    ["an apiId of 3 characters (valid, but no such API)", "abc"],
    ["an apiId of 255 characters (valid, but no such API)", "a".repeat(255)],
  ])("%s -> 404 err:svc:data:api_not_found", async (_label, apiId) => {
    const res = await h.post("/v2/keys.createKey", { apiId }, await admin(h));
    expectError(h, res, 404, "err:svc:data:api_not_found");
    expect(res.body.error.title).toBe("Not Found");
  });

  it("a deleted API -> 404 api_not_found", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post("/v2/keys.createKey", { apiId }, rk), 404, "err:svc:data:api_not_found");
  });

  // Another workspace's API reads as missing: nobody can create keys in it or confirm its id.
  it("another workspace's API -> 404 api_not_found", async () => {
    const apiId = await createApi(h);
    expectError(h, await h.post("/v2/keys.createKey", { apiId }, await foreignAdmin(h)), 404, "err:svc:data:api_not_found");
  });

  it("a role that does not exist -> 404 err:svc:data:role_not_found naming it, and nothing is created", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const missing = uid("no_such_role");
    const res = await h.post("/v2/keys.createKey", { apiId, roles: [missing], externalId: uid("someone"), permissions: ["x.y"] }, rk);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect(res.body.error.detail).toContain(missing);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it("one missing role among existing ones -> 404 role_not_found, and nothing is created", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const exists = uid("reader");
    await seedRole(h, exists);
    const missing = uid("ghost");
    const res = await h.post("/v2/keys.createKey", { apiId, roles: [exists, missing] }, rk);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect(res.body.error.detail).toContain(missing);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it("a role of another workspace does not count -> 404 role_not_found", async () => {
    const name = uid("theirs");
    // A role with this name exists only in another workspace.
    await h.db.pool.execute("INSERT INTO roles (id, workspace_id, name, created_at_m) VALUES (?, ?, ?, ?)", [uid("role"), "ws_someoneelse", name, Date.now()]);
    const mine = await createApi(h);
    expectError(h, await h.post("/v2/keys.createKey", { apiId: mine, roles: [name] }, await admin(h)), 404, "err:svc:data:role_not_found");
  });
});
