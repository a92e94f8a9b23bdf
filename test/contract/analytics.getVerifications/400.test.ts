import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAnalyticsRefusals, VERIFY } from "../shared/analytics.js";

describe("analytics.getVerifications 400", () => {
  const h = useHarness();
  describeAnalyticsRefusals(h, VERIFY, "verifications");
});
