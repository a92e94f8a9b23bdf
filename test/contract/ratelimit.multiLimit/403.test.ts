import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, expectError, expectOk, uid } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.multiLimit 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  async function namespaceId(name: string): Promise<string> {
    expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 }, await admin(h)));
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    return (rows as Array<{ id: string }>)[0]?.id as string;
  }

  it("a grant for only one of the namespaces -> 403, and no counter is consumed", async () => {
    const a = uid("ns");
    const b = uid("ns");
    const idA = await namespaceId(a);
    await namespaceId(b);
    const rk = await h.rootKey([`ratelimit.${idA}.limit`]);
    await awayFromWindowEdge(MINUTE);
    const checks = [
      { namespace: a, identifier: "x", limit: 5, duration: MINUTE },
      { namespace: b, identifier: "x", limit: 5, duration: MINUTE },
    ];
    expectError(h, await h.post("/v2/ratelimit.multiLimit", checks, rk), 403, FORBIDDEN);
    const after = expectOk(await h.post("/v2/ratelimit.limit", { ...checks[0], cost: 0 }, await admin(h)));
    expect(after.remaining).toBe(5);
  });

  it("a new namespace without create_namespace -> 403, and none of the new namespaces is created", async () => {
    const known = uid("ns");
    await namespaceId(known);
    const fresh = uid("ns");
    const rk = await h.rootKey(["ratelimit.*.limit"]);
    const checks = [
      { namespace: known, identifier: "x", limit: 5, duration: MINUTE },
      { namespace: fresh, identifier: "x", limit: 5, duration: MINUTE },
    ];
    expectError(h, await h.post("/v2/ratelimit.multiLimit", checks, rk), 403, FORBIDDEN);
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [fresh]);
    expect(rows).toEqual([]);
  });

  it("a root key without any limit grant -> 403", async () => {
    const rk = await h.rootKey(["ratelimit.*.read_override"]);
    expectError(h, await h.post("/v2/ratelimit.multiLimit", [{ namespace: uid("ns"), identifier: "x", limit: 1, duration: MINUTE }], rk), 403, FORBIDDEN);
  });
});
