import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.createKey 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.createKey", { apiId: "api_doesnotexist0000" });
});
