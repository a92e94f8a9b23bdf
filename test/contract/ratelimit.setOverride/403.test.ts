import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError, namespace, uid } from "../shared/helpers.js";

describe("ratelimit.setOverride 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  const body = (namespaceId: string) => ({ namespaceId, identifier: "user", limit: 1, duration: 60_000 });

  it("a root key with every override grant but set_override -> 403", async () => {
    const ns = await namespace(h);
    const rk = await h.rootKey(["ratelimit.*.read_override", "ratelimit.*.delete_override", "ratelimit.*.limit"]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(ns.name), rk), 403, FORBIDDEN);
  });

  it("a set_override grant for another namespace -> 403", async () => {
    const a = await namespace(h);
    const b = await namespace(h);
    const rk = await h.rootKey([`ratelimit.${a.id}.set_override`]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(b.name), rk), 403, FORBIDDEN);
  });

  it("a root key without any set_override grant naming an unknown namespace -> 403, not 404", async () => {
    const rk = await h.rootKey(["ratelimit.*.read_override"]);
    expectError(h, await h.post("/v2/ratelimit.setOverride", body(uid("nons")), rk), 403, FORBIDDEN);
  });
});
