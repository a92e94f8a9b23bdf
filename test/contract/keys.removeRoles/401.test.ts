import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.removeRoles 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.removeRoles", { keyId: "key_doesnotexist0000", roles: ["admin"] });
});
