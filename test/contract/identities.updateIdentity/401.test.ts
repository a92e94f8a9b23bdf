import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("identities.updateIdentity 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/identities.updateIdentity", { identity: "user_1", meta: {} });
});
