import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.deleteRole 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.delete_role -> 403 naming it, and the role stays", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "kept" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.read_role", "rbac.*.create_role", "rbac.*.delete_permission"]);
    expectError(h, await h.post("/v2/permissions.deleteRole", { role: "kept" }, rk), 403, FORBIDDEN, "Missing permission: 'rbac.*.delete_role'");
    expectOk(await h.post("/v2/permissions.getRole", { role: "kept" }, rk));
  });

  it("without the grant, an unknown role is a 403 too, not a 404", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expectError(h, await h.post("/v2/permissions.deleteRole", { role: "no_such_role" }, rk), 403, FORBIDDEN);
  });
});
