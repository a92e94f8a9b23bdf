import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("apis.listKeys 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/apis.listKeys", { apiId: "api_doesnotexist0000" });
});
