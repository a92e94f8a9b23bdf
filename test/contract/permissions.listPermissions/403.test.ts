import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError } from "../shared/helpers.js";

describe("permissions.listPermissions 403", () => {
  const h = useHarness();

  it("a root key without rbac.*.read_permission -> 403 naming the missing grant", async () => {
    const rk = await h.rootKey(["rbac.*.read_role", "rbac.*.create_permission"]);
    expectError(
      h,
      await h.post("/v2/permissions.listPermissions", {}, rk),
      403,
      "err:svc:authorization:insufficient_permissions",
      "Missing permission: 'rbac.*.read_permission'",
    );
  });
});
