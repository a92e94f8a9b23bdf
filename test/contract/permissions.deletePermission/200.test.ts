import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, getKey, verifyKey } from "../shared/helpers.js";

describe("permissions.deletePermission 200", () => {
  const h = useHarness();

  const create = async (slug: string) =>
    expectOk(await h.post("/v2/permissions.createPermission", { name: slug, slug }, await admin(h))).permissionId as string;

  it("answers data {} by id and by slug, and the permission is gone", async () => {
    const rk = await h.rootKey(["rbac.*.delete_permission"]);
    const byId = await create("delete.by_id");
    expect(expectOk(await h.post("/v2/permissions.deletePermission", { permission: byId }, rk))).toEqual({});
    await create("delete.by_slug");
    expect(expectOk(await h.post("/v2/permissions.deletePermission", { permission: "delete.by_slug" }, rk))).toEqual({});
    for (const permission of [byId, "delete.by_id", "delete.by_slug"]) {
      expectError(h, await h.post("/v2/permissions.getPermission", { permission }, await admin(h)), 404, "err:svc:data:permission_not_found");
    }
  });

  it("is a hard delete: the slug can be created again, with a new id", async () => {
    const first = await create("reborn.perm");
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: first }, await admin(h)));
    const second = await create("reborn.perm");
    expect(second).not.toBe(first);
  });

  it("takes the permission from every role and key, leaving the rest", async () => {
    const rk = await admin(h);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "editor", permissions: ["docs.read", "docs.write"] }, rk));
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["docs.write", "docs.share"] });
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: "docs.write" }, rk));

    const role = expectOk(await h.post("/v2/permissions.getRole", { role: roleId }, rk));
    expect(role.permissions.map((p: { slug: string }) => p.slug)).toEqual(["docs.read"]);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual(["docs.share"]);
    const [links] = await h.db.pool.query(
      "SELECT COUNT(*) AS n FROM roles_permissions rp LEFT JOIN permissions p ON p.id = rp.permission_id WHERE p.id IS NULL",
    );
    expect((links as Array<{ n: number }>)[0]?.n).toBe(0);
    const [keyLinks] = await h.db.pool.query(
      "SELECT COUNT(*) AS n FROM keys_permissions kp LEFT JOIN permissions p ON p.id = kp.permission_id WHERE p.id IS NULL",
    );
    expect((keyLinks as Array<{ n: number }>)[0]?.n).toBe(0);
  });

  // Every change is seen by the very next verification on this instance, although
  // the key's record (with its permissions) was cached: the delete evicts the
  // workspace's records (docs/caching.md).
  it("a key holding it directly fails the very next verification that asks for it", async () => {
    const { key } = await createKey(h, await createApi(h), { permissions: ["reports.read", "reports.export"] });
    expect(await verifyKey(h, key, { permissions: "reports.export" })).toMatchObject({ valid: true, code: "VALID" });
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: "reports.export" }, await admin(h)));
    const after = await verifyKey(h, key, { permissions: "reports.export" });
    expect(after).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", permissions: ["reports.read"] });
    expect(await verifyKey(h, key, { permissions: "reports.read" })).toMatchObject({ valid: true, code: "VALID" });
  });

  it("a key holding it through a role fails the very next verification that asks for it", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createRole", { name: "auditor", permissions: ["audit.read", "audit.sign"] }, rk));
    const { key } = await createKey(h, await createApi(h), { roles: ["auditor"] });
    expect(await verifyKey(h, key, { permissions: "audit.sign" })).toMatchObject({ valid: true, code: "VALID" });
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: "audit.sign" }, rk));
    expect(await verifyKey(h, key, { permissions: "audit.sign" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "audit.read" })).toMatchObject({ valid: true, code: "VALID", roles: ["auditor"] });
  });

  it("the grant rbac.* covers rbac.*.delete_permission", async () => {
    await create("glob.delete");
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: "glob.delete" }, await h.rootKey(["rbac.*"])));
  });
});
