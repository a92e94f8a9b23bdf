import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("permissions.getPermission 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/permissions.getPermission", { permission: "documents.read" });
});
