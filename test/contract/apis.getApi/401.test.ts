import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("apis.getApi 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/apis.getApi", { apiId: "api_doesnotexist0000" });
});
