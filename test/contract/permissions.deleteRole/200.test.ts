import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, getKey, verifyKey } from "../shared/helpers.js";

describe("permissions.deleteRole 200", () => {
  const h = useHarness();

  it("answers data {} by id and by name, and the role is gone", async () => {
    const rk = await h.rootKey(["rbac.*.delete_role"]);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "by_id" }, await admin(h)));
    expect(expectOk(await h.post("/v2/permissions.deleteRole", { role: roleId }, rk))).toEqual({});
    expectOk(await h.post("/v2/permissions.createRole", { name: "by name" }, await admin(h)));
    expect(expectOk(await h.post("/v2/permissions.deleteRole", { role: "by name" }, rk))).toEqual({});
    for (const role of [roleId, "by_id", "by name"]) {
      expectError(h, await h.post("/v2/permissions.getRole", { role }, await admin(h)), 404, "err:svc:data:role_not_found");
    }
  });

  it("takes the role from every key and drops its permission links; the permissions themselves stay", async () => {
    const rk = await admin(h);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "temp", permissions: ["temp.read"] }, rk));
    expectOk(await h.post("/v2/permissions.createRole", { name: "kept", permissions: ["kept.read"] }, rk));
    const { keyId } = await createKey(h, await createApi(h), { roles: ["temp", "kept"], permissions: ["direct.read"] });
    expectOk(await h.post("/v2/permissions.deleteRole", { role: "temp" }, rk));

    expect(expectOk(await getKey(h, keyId))).toMatchObject({ roles: ["kept"], permissions: ["direct.read", "kept.read"] });
    expectOk(await h.post("/v2/permissions.getPermission", { permission: "temp.read" }, rk));
    for (const table of ["roles_permissions", "keys_roles"]) {
      const [rows] = await h.db.pool.query(`SELECT COUNT(*) AS n FROM ${table} WHERE role_id = ?`, [roleId]);
      expect((rows as Array<{ n: number }>)[0]?.n, table).toBe(0);
    }
  });

  // Every change is seen by the very next verification on this instance
  // (docs/caching.md). The key's record (roles and permissions included) is
  // cached by the first verification; deleting the role must evict it.
  it("a key with the role loses its permissions on the very next verification", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createRole", { name: "publisher", permissions: ["posts.publish", "posts.*"] }, rk));
    const { key } = await createKey(h, await createApi(h), { roles: ["publisher"], permissions: ["posts.read"] });

    expect(await verifyKey(h, key, { permissions: "posts.publish" })).toMatchObject({ valid: true, code: "VALID", roles: ["publisher"] });
    expectOk(await h.post("/v2/permissions.deleteRole", { role: "publisher" }, rk));
    const after = await verifyKey(h, key, { permissions: "posts.publish" });
    expect(after).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", permissions: ["posts.read"] });
    expect(after.roles).toBeUndefined();
    // The wildcard the role granted is gone too; the direct permission is not.
    expect(await verifyKey(h, key, { permissions: "posts.delete" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "posts.read" })).toMatchObject({ valid: true, code: "VALID" });
  });

  // Control for the test above: the verification really is served from the
  // cache, so only the eviction can make the difference. A change made behind
  // keyhold's back (straight in the database) is not seen.
  it("control: the record is cached, so a change behind keyhold's back is not seen until deleteRole evicts it", async () => {
    const rk = await admin(h);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "cached", permissions: ["cache.read"] }, rk));
    const { key } = await createKey(h, await createApi(h), { roles: ["cached"] });
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: true });

    await h.db.pool.query("DELETE FROM roles_permissions WHERE role_id = ?", [roleId]);
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: true }); // stale, from the cache

    expectOk(await h.post("/v2/permissions.deleteRole", { role: roleId }, rk));
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
  });

  it("the grant rbac.* covers rbac.*.delete_role", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "glob" }, await admin(h)));
    expectOk(await h.post("/v2/permissions.deleteRole", { role: "glob" }, await h.rootKey(["rbac.*"])));
  });
});
