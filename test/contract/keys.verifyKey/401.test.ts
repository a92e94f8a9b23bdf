import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.verifyKey 401", () => {
  const h = useHarness();
  // The key to verify travels in the body; the Authorization header always carries the root key.
  describeAuth(h, "/v2/keys.verifyKey", { key: "sk_3xYzAbCdEfGhJkLmNpQrSt" });
});
