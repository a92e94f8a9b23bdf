import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("analytics.getRatelimits 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/analytics.getRatelimits", { query: "SELECT 1 AS one" });
});
