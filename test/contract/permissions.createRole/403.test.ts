import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.createRole 403", () => {
  const h = useHarness();

  const roleMissing = async (name: string) =>
    expectError(h, await h.post("/v2/permissions.getRole", { role: name }, await admin(h)), 404, "err:svc:data:role_not_found");

  it("a root key without rbac.*.create_role -> 403 naming it", async () => {
    const rk = await h.rootKey(["rbac.*.read_role", "rbac.*.add_permission_to_role", "rbac.*.create_permission"]);
    expectError(h, await h.post("/v2/permissions.createRole", { name: "no_grant" }, rk), 403, FORBIDDEN, "Missing permission: 'rbac.*.create_role'");
    await roleMissing("no_grant");
  });

  it("permissions given without rbac.*.add_permission_to_role -> 403 naming it", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "exists.read" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.create_permission"]);
    const res = await h.post("/v2/permissions.createRole", { name: "no_add", permissions: ["exists.read"] }, rk);
    expectError(h, res, 403, FORBIDDEN, "Missing permission: 'rbac.*.add_permission_to_role'");
    await roleMissing("no_add");
  });

  it("a new slug without rbac.*.create_permission -> 403 naming it; neither the role nor the slug is created", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "old.read" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.add_permission_to_role"]);
    const res = await h.post("/v2/permissions.createRole", { name: "no_create", permissions: ["old.read", "brand.new"] }, rk);
    expectError(h, res, 403, FORBIDDEN, "Missing permission: 'rbac.*.create_permission'");
    await roleMissing("no_create");
    const perm = await h.post("/v2/permissions.getPermission", { permission: "brand.new" }, await admin(h));
    expectError(h, perm, 404, "err:svc:data:permission_not_found");
  });

  it("a slug that differs from an existing one only in case is new, and needs rbac.*.create_permission", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "mixed.read" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.add_permission_to_role"]);
    expectError(h, await h.post("/v2/permissions.createRole", { name: "cased", permissions: ["Mixed.Read"] }, rk), 403, FORBIDDEN);
    // The exact slug is fine with the same key.
    expect((await h.post("/v2/permissions.createRole", { name: "cased", permissions: ["mixed.read"] }, rk)).status).toBe(200);
  });

  it("another workspace's slug does not count as existing", async () => {
    const other = await h.rootKey(["*"], "create_role_other_ws");
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "theirs.read" }, other));
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.add_permission_to_role"]);
    expectError(h, await h.post("/v2/permissions.createRole", { name: "theirs", permissions: ["theirs.read"] }, rk), 403, FORBIDDEN);
  });
});
