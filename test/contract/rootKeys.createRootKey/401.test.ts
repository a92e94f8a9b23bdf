import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("rootKeys.createRootKey 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] });
});
