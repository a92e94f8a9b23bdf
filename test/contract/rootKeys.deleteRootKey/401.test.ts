import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("rootKeys.deleteRootKey 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/rootKeys.deleteRootKey", { keyId: "key_doesnotexist0000" });
});
