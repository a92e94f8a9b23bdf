import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

describe("ratelimit.setOverride 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  async function namespace(): Promise<{ name: string; id: string }> {
    const name = uid("ns");
    expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    return { name, id: (rows as Array<{ id: string }>)[0]?.id as string };
  }
  const body = (namespaceId: string) => ({ namespaceId, identifier: "user", limit: 1, duration: 60_000 });

  it("a root key with every override grant but set_override -> 403", async () => {
    const ns = await namespace();
    const rk = await h.rootKey(["ratelimit.*.read_override", "ratelimit.*.delete_override", "ratelimit.*.limit"]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(ns.name), rk), 403, FORBIDDEN);
  });

  it("a set_override grant for another namespace -> 403", async () => {
    const a = await namespace();
    const b = await namespace();
    const rk = await h.rootKey([`ratelimit.${a.id}.set_override`]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(b.name), rk), 403, FORBIDDEN);
  });

  it("a root key without any set_override grant naming an unknown namespace -> 403, not 404", async () => {
    const rk = await h.rootKey(["ratelimit.*.read_override"]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(uid("nons")), rk), 403, FORBIDDEN);
  });
});
