import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAnalyticsRefusals, RATELIMITS } from "../shared/analytics.js";

describe("analytics.getRatelimits 400", () => {
  const h = useHarness();
  describeAnalyticsRefusals(h, RATELIMITS, "ratelimits");
});
