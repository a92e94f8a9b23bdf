import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const EXISTS = "err:svc:data:role_already_exists";

describe("permissions.createRole 409", () => {
  const h = useHarness();

  it("a name the workspace already has -> 409 role_already_exists", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createRole", { name: "Dup role" }, rk));
    const res = await h.post("/v2/permissions.createRole", { name: "Dup role", description: "again" }, rk);
    expectError(h, res, 409, EXISTS, "A role with name 'Dup role' already exists in this workspace");
    expect(res.body.error.title).toBe("Conflict");
  });

  it("a refused duplicate creates none of its new permissions", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createRole", { name: "taken" }, rk));
    expectError(h, await h.post("/v2/permissions.createRole", { name: "taken", permissions: ["never.created"] }, rk), 409, EXISTS);
    const res = await h.post("/v2/permissions.getPermission", { permission: "never.created" }, rk);
    expectError(h, res, 404, "err:svc:data:permission_not_found");
  });

  it("the name of a deleted role is free again; another workspace's name is free", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createRole", { name: "recycled" }, rk));
    expectOk(await h.post("/v2/permissions.deleteRole", { role: "recycled" }, rk));
    expectOk(await h.post("/v2/permissions.createRole", { name: "recycled" }, rk));
    expectOk(await h.post("/v2/permissions.createRole", { name: "recycled" }, await foreignAdmin(h)));
  });

  it("concurrent creates of one name: exactly one wins, the others get 409", async () => {
    const rk = await admin(h);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.post("/v2/permissions.createRole", { name: "race", permissions: [`race.p${i}`] }, rk)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(h, r, 409, EXISTS);
  });
});
