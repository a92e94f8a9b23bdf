import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("keys.migrateKeys 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/keys.migrateKeys", { migrationId: "mig_doesnotexist0000", apiId: "api_doesnotexist0000", keys: [{ hash: "abcdef" }] });
});
