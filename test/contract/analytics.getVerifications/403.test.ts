import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { query, VERIFY } from "../shared/analytics.js";
import { expectError } from "../shared/helpers.js";

describe("analytics.getVerifications 403", () => {
  const h = useHarness();

  it.each<[string, string[]]>([
    ["without any read_analytics grant", ["apis.*.read_api", "apis.*.read_key", "apis.*.verify_key"]],
    ["with a rate-limit analytics grant only", ["ratelimit.*.read_analytics"]],
  ])("a root key %s -> 403 insufficient_permissions", async (_label, perms) => {
    const res = await query(h, VERIFY, "SELECT 1 AS one", await h.rootKey(perms));
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain("apis.*.read_analytics");
  });
});
