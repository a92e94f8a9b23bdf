import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError } from "../shared/helpers.js";

describe("permissions.listRoles 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.read_role -> 403 naming it", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission", "rbac.*.create_role"]);
    expectError(
      h,
      await h.post("/v2/permissions.listRoles", {}, rk),
      403,
      "err:svc:authorization:insufficient_permissions",
      "Missing permission: 'rbac.*.read_role'",
    );
  });
});
