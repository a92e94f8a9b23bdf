import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("permissions.setRolePermissions 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/permissions.setRolePermissions", { roleId: "role_doesnotexist", permissions: ["documents.read"] });
});
