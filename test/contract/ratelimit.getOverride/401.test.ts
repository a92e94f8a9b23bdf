import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("ratelimit.getOverride 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/ratelimit.getOverride", { namespaceId: "ns", identifier: "user_1" });
});
