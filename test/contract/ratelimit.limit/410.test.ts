import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

describe("ratelimit.limit 410", () => {
  const h = useHarness();

  // There is no deleteNamespace endpoint in this subset: the namespace is soft-deleted in the database.
  it("a soft-deleted namespace -> 410 ratelimit_namespace_gone, by name and by id", async () => {
    const name = uid("ns");
    const body = { namespace: name, identifier: "user", limit: 10, duration: 60_000 };
    expectOk(await h.post("/v2/ratelimit.limit", body, await admin(h)));
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE name = ?", [Date.now(), name]);
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    const id = (rows as Array<{ id: string }>)[0]?.id;
    const detail = "This namespace has been deleted. Contact support to restore.";
    expectError(h, await h.post("/v2/ratelimit.limit", body, await admin(h)), 410, "err:svc:data:ratelimit_namespace_gone", detail);
    expectError(h, await h.post("/v2/ratelimit.limit", { ...body, namespace: id }, await admin(h)), 410, "err:svc:data:ratelimit_namespace_gone");
    // Again by name: the deleted namespace is now cached (as read), and still 410.
    expectError(h, await h.post("/v2/ratelimit.limit", body, await admin(h)), 410, "err:svc:data:ratelimit_namespace_gone", detail);
  });
});
