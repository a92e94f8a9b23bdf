import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("analytics.getVerifications 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/analytics.getVerifications", { query: "SELECT 1 AS one" });
});
