import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAnalyticsLimits, VERIFY } from "../shared/analytics.js";

describe("analytics.getVerifications 422 and 503", () => {
  const h = useHarness();
  describeAnalyticsLimits(h, VERIFY, "verifications");
});
