import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.createPermission 403", () => {
  const h = useHarness();
  const body = { name: "Read", slug: "documents.read" };

  it("a root key without rbac.*.create_permission -> 403 naming the missing grant", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission", "rbac.*.create_role", "apis.*.create_api"]);
    expectError(h, await h.post("/v2/permissions.createPermission", body, rk), 403, FORBIDDEN, "Missing permission: 'rbac.*.create_permission'");
  });

  // Only the workspace-wide grant exists for rbac actions: a grant naming one
  // resource does not cover `rbac.*.create_permission` (its `*` is literal there).
  it("a grant for a single rbac resource is not enough", async () => {
    const rk = await h.rootKey(["rbac.perm_123.create_permission"]);
    expectError(h, await h.post("/v2/permissions.createPermission", body, rk), 403, FORBIDDEN);
  });

  it("another resource's wildcard (identity.*) is not enough", async () => {
    const rk = await h.rootKey(["identity.*", "apis.*"]);
    expectError(h, await h.post("/v2/permissions.createPermission", body, rk), 403, FORBIDDEN);
  });

  it("a refused call creates nothing", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expectError(h, await h.post("/v2/permissions.createPermission", { name: "x", slug: "refused.slug" }, rk), 403, FORBIDDEN);
    const res = await h.post("/v2/permissions.getPermission", { permission: "refused.slug" }, await admin(h));
    expectError(h, res, 404, "err:svc:data:permission_not_found");
    expect(expectOk(await h.post("/v2/permissions.listPermissions", {}, await admin(h)), { pagination: true })).toEqual([]);
  });
});
