import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.deletePermission 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.delete_permission -> 403, and the permission stays", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "kept.perm" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.read_permission", "rbac.*.create_permission", "rbac.*.delete_role"]);
    expectError(
      h,
      await h.post("/v2/permissions.deletePermission", { permission: "kept.perm" }, rk),
      403,
      FORBIDDEN,
      "Missing permission: 'rbac.*.delete_permission'",
    );
    expectOk(await h.post("/v2/permissions.getPermission", { permission: "kept.perm" }, rk));
  });

  it("without the grant, an unknown permission is a 403 too, not a 404", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expectError(h, await h.post("/v2/permissions.deletePermission", { permission: "no.such.perm" }, rk), 403, FORBIDDEN);
  });
});
