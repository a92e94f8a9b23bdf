import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

describe("ratelimit.multiLimit 410", () => {
  const h = useHarness();

  // There is no deleteNamespace endpoint in this subset: the namespace is soft-deleted in the database.
  it("any soft-deleted namespace among the checks -> 410 ratelimit_namespace_gone", async () => {
    const live = uid("ns");
    const gone = uid("ns");
    for (const namespace of [live, gone]) {
      expectOk(await h.post("/v2/ratelimit.limit", { namespace, identifier: "s", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
    }
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE name = ?", [Date.now(), gone]);
    const checks = [
      { namespace: live, identifier: "x", limit: 5, duration: 60_000 },
      { namespace: gone, identifier: "x", limit: 5, duration: 60_000 },
    ];
    expectError(h, await h.post("/v2/ratelimit.multiLimit", checks, await admin(h)), 410, "err:svc:data:ratelimit_namespace_gone");
  });
});
