import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, namespace } from "../shared/helpers.js";

describe("ratelimit.deleteOverride 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  it("a root key with every override grant but delete_override -> 403, and the override stays", async () => {
    const ns = await namespace(h);
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId: ns.name, identifier: "x", limit: 1, duration: 60_000 }, await admin(h)));
    const rk = await h.rootKey(["ratelimit.*.set_override", "ratelimit.*.read_override", "ratelimit.*.limit"]);
    expectError(h, await h.post("/v2/ratelimit.deleteOverride", { namespaceId: ns.name, identifier: "x" }, rk), 403, FORBIDDEN);
    expect((await h.post("/v2/ratelimit.getOverride", { namespaceId: ns.name, identifier: "x" }, await admin(h))).status).toBe(200);
  });

  it("a delete_override grant for another namespace -> 403", async () => {
    const a = await namespace(h);
    const b = await namespace(h);
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId: b.name, identifier: "x", limit: 1, duration: 60_000 }, await admin(h)));
    const rk = await h.rootKey([`ratelimit.${a.id}.delete_override`]);
    expectError(h, await h.post("/v2/ratelimit.deleteOverride", { namespaceId: b.name, identifier: "x" }, rk), 403, FORBIDDEN);
  });
});
