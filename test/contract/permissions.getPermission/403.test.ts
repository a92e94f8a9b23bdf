import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.getPermission 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.read_permission -> 403 naming the missing grant", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "some.perm" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.create_permission", "rbac.*.read_role", "rbac.*.delete_permission"]);
    expectError(
      h,
      await h.post("/v2/permissions.getPermission", { permission: "some.perm" }, rk),
      403,
      FORBIDDEN,
      "Missing permission: 'rbac.*.read_permission'",
    );
  });

  // The grant does not depend on the permission, so it is checked first: a key
  // without it cannot learn which permissions exist from 404 versus 200.
  it("without the grant, an unknown permission is a 403 too, not a 404", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expectError(h, await h.post("/v2/permissions.getPermission", { permission: "no.such.perm" }, rk), 403, FORBIDDEN);
  });
});
