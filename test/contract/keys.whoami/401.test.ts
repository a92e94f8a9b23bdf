import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.whoami 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.whoami", { key: "sk_3xYzAbCdEfGhJkLmNpQrSt" });
});
