import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("apis.createApi 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/apis.createApi", { name: "auth-suite-api" });
});
