import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("rootKeys.updateRootKey 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/rootKeys.updateRootKey", { keyId: "key_doesnotexist0000", enabled: false });
});
