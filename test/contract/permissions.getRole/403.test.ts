import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("permissions.getRole 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.read_role -> 403 naming it", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "secret" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.read_permission", "rbac.*.create_role", "rbac.*.delete_role"]);
    expectError(h, await h.post("/v2/permissions.getRole", { role: "secret" }, rk), 403, FORBIDDEN, "Missing permission: 'rbac.*.read_role'");
  });

  // Checked before the lookup: a key without the grant cannot tell which roles exist.
  it("without the grant, an unknown role is a 403 too, not a 404", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expectError(h, await h.post("/v2/permissions.getRole", { role: "no_such_role" }, rk), 403, FORBIDDEN);
  });
});
