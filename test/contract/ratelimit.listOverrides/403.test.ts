import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError, namespace, uid } from "../shared/helpers.js";

describe("ratelimit.listOverrides 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  it("a root key with every override grant but read_override -> 403", async () => {
    const ns = await namespace(h);
    const rk = await h.rootKey(["ratelimit.*.set_override", "ratelimit.*.delete_override", "ratelimit.*.list_overrides"]);
    expectError(h, await h.post("/v2/ratelimit.listOverrides", { namespaceId: ns.name }, rk), 403, FORBIDDEN);
  });

  it("a read_override grant for another namespace -> 403", async () => {
    const a = await namespace(h);
    const b = await namespace(h);
    const rk = await h.rootKey([`ratelimit.${a.id}.read_override`]);
    expectError(h, await h.post("/v2/ratelimit.listOverrides", { namespaceId: b.name }, rk), 403, FORBIDDEN);
  });

  it("a root key without any read_override grant naming an unknown namespace -> 403, not 404", async () => {
    const rk = await h.rootKey(["ratelimit.*.limit"]);
    expectError(h, await h.post("/v2/ratelimit.listOverrides", { namespaceId: uid("nons") }, rk), 403, FORBIDDEN);
  });
});
