import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAnalyticsLimits, RATELIMITS } from "../shared/analytics.js";

describe("analytics.getRatelimits 422 and 503", () => {
  const h = useHarness();
  describeAnalyticsLimits(h, RATELIMITS, "ratelimits");
});
