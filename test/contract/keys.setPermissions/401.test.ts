import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.setPermissions 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.setPermissions", { keyId: "key_doesnotexist0000", permissions: ["documents.read"] });
});
