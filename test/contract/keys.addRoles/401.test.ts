import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.addRoles 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.addRoles", { keyId: "key_doesnotexist0000", roles: ["admin"] });
});
