import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin, uid } from "../shared/helpers.js";

describe("ratelimit.setOverride 404", () => {
  const h = useHarness();
  const NOT_FOUND = "err:svc:data:ratelimit_namespace_not_found";
  const body = (namespaceId: string) => ({ namespaceId, identifier: "x", limit: 1, duration: 60_000 });

  // setOverride never creates a namespace (docs/ratelimits.md, "Overrides").
  it("an unknown namespace -> 404 ratelimit_namespace_not_found", async () => {
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(uid("nons")), await admin(h)), 404, NOT_FOUND, "This namespace does not exist.");
    expectError(h, await h.post("/v2/ratelimit.setOverride", body("rlns_doesnotexist"), await admin(h)), 404, NOT_FOUND);
  });

  it("a soft-deleted namespace -> 404", async () => {
    const name = uid("ns");
    expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "s", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE name = ?", [Date.now(), name]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(name), await admin(h)), 404, NOT_FOUND);
  });

  it("another workspace's namespace -> 404", async () => {
    const name = uid("ns");
    expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "s", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(name), await foreignAdmin(h)), 404, NOT_FOUND);
  });
});
