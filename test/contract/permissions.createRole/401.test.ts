import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("permissions.createRole 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/permissions.createRole", { name: "viewer", permissions: ["documents.read"] });
});
