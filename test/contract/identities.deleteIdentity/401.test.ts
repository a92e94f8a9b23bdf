import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("identities.deleteIdentity 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/identities.deleteIdentity", { identity: "user_1" });
});
