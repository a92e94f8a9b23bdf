import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("ratelimit.multiLimit 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/ratelimit.multiLimit", [{ namespace: "ns", identifier: "user_1", limit: 10, duration: 60_000 }]);
});
