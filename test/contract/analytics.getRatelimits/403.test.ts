import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { query, RATELIMITS } from "../shared/analytics.js";
import { expectError } from "../shared/helpers.js";

describe("analytics.getRatelimits 403", () => {
  const h = useHarness();

  it.each<[string, string[]]>([
    ["without any read_analytics grant", ["ratelimit.*.limit", "ratelimit.*.read_override"]],
    ["with an API analytics grant only", ["apis.*.read_analytics"]],
  ])("a root key %s -> 403 insufficient_permissions", async (_label, perms) => {
    const res = await query(h, RATELIMITS, "SELECT 1 AS one", await h.rootKey(perms));
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain("ratelimit.*.read_analytics");
  });
});
