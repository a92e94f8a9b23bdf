import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.addPermissions 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.addPermissions", { keyId: "key_doesnotexist0000", permissions: ["documents.read"] });
});
