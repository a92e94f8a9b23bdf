import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("rootKeys.rotateRootKey 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/rootKeys.rotateRootKey", { keyId: "key_doesnotexist0000", gracePeriodMs: 0 });
});
