import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

describe("ratelimit.limit 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";
  const body = (namespace: string) => ({ namespace, identifier: "user", limit: 10, duration: 60_000 });

  async function existingNamespace(): Promise<{ name: string; id: string }> {
    const name = uid("ns");
    expectOk(await h.post("/v2/ratelimit.limit", { ...body(name), cost: 0 }, await admin(h)));
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    return { name, id: (rows as Array<{ id: string }>)[0]?.id as string };
  }

  it("a root key without any limit grant -> 403 on an existing namespace", async () => {
    const ns = await existingNamespace();
    const rk = await h.rootKey(["ratelimit.*.set_override", "ratelimit.*.read_override", "ratelimit.*.create_namespace"]);
    expectError(h, await h.post("/v2/ratelimit.limit", body(ns.name), rk), 403, FORBIDDEN);
  });

  it("a limit grant for another namespace -> 403", async () => {
    const a = await existingNamespace();
    const b = await existingNamespace();
    const rk = await h.rootKey([`ratelimit.${a.id}.limit`]);
    expectError(h, await h.post("/v2/ratelimit.limit", body(b.name), rk), 403, FORBIDDEN);
  });

  it("a namespace and identifier already cached (limited twice) still need the grant on that namespace", async () => {
    const a = await existingNamespace();
    const b = await existingNamespace();
    // The second use reads b from the database and caches it; its identifier's override candidates are cached too.
    expectOk(await h.post("/v2/ratelimit.limit", { ...body(b.name), cost: 0 }, await admin(h)));
    const onA = await h.rootKey([`ratelimit.${a.id}.limit`]);
    expectError(h, await h.post("/v2/ratelimit.limit", body(b.name), onA), 403, FORBIDDEN);
    const onB = await h.rootKey([`ratelimit.${b.id}.limit`]);
    expect(expectOk(await h.post("/v2/ratelimit.limit", body(b.name), onB))).toMatchObject({ success: true, limit: 10, remaining: 9 });
  });

  // Permission strings use the namespace id, never its name (docs/permissions.md, "Grants: `resource.resourceId.action`").
  it("a grant naming the namespace by its name does not count", async () => {
    const ns = await existingNamespace();
    const rk = await h.rootKey([`ratelimit.${ns.name}.limit`]);
    expectError(h, await h.post("/v2/ratelimit.limit", body(ns.name), rk), 403, FORBIDDEN);
  });

  it("a new namespace without ratelimit.*.create_namespace -> 403, and nothing is created", async () => {
    const name = uid("ns");
    const rk = await h.rootKey(["ratelimit.*.limit"]);
    const res = await h.post("/v2/ratelimit.limit", body(name), rk);
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain("create_namespace");
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    expect(rows).toEqual([]);
  });

  it("create_namespace without limit -> 403 for a new namespace", async () => {
    const rk = await h.rootKey(["ratelimit.*.create_namespace"]);
    expectError(h, await h.post("/v2/ratelimit.limit", body(uid("ns")), rk), 403, FORBIDDEN);
  });
});
