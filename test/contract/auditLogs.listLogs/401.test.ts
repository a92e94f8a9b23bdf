import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeAuth } from "../shared/auth-suite.js";

describe("auditLogs.listLogs 401", () => {
  const h = useHarness();
  describeAuth(h, "/v2/auditLogs.listLogs", {});
});
