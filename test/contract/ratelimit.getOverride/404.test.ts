import { describe, it } from "vitest";
import type { Harness, Res } from "../../harness.js";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin, namespace, uid } from "../shared/helpers.js";

const DETAIL = "The requested rate limit override could not be found";

// SDKs switch on error.type, so the whole envelope is asserted, with its exact detail text.
const expectOverrideNotFound = (h: Harness, res: Res) => expectError(h, res, 404, "err:svc:data:ratelimit_override_not_found", DETAIL);

describe("ratelimit.getOverride 404", () => {
  const h = useHarness();

  const set = async (namespaceId: string, identifier: string) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId, identifier, limit: 5, duration: 60_000 }, await admin(h)));
  const get = async (namespaceId: string, identifier: string, rootKey?: string) =>
    h.post("/v2/ratelimit.getOverride", { namespaceId, identifier }, rootKey ?? (await admin(h)));

  it("an identifier without an override -> 404 override_not_found", async () => {
    const ns = await namespace(h);
    await set(ns.name, "user_1");
    expectOverrideNotFound(h, await get(ns.name, "user_2"));
  });

  it("the wrong namespace (it exists but holds no such override) -> the same 404", async () => {
    const withIt = await namespace(h);
    const without = await namespace(h);
    await set(withIt.name, "user_1");
    expectOverrideNotFound(h, await get(without.name, "user_1"));
  });

  it("a deleted override -> the same 404", async () => {
    const ns = await namespace(h);
    await set(ns.name, "temp");
    expectOk(await h.post("/v2/ratelimit.deleteOverride", { namespaceId: ns.name, identifier: "temp" }, await admin(h)));
    expectOverrideNotFound(h, await get(ns.name, "temp"));
  });

  // An unknown or deleted namespace has no override to find, so it is the override
  // that is not found, not the namespace (docs/errors.md, "Codes").
  it("an unknown namespace -> the same 404, not namespace_not_found", async () => {
    expectOverrideNotFound(h, await get(uid("nons"), "user_1"));
    expectOverrideNotFound(h, await get("rlns_doesnotexist", "user_1"));
  });

  it("a soft-deleted namespace -> the same 404", async () => {
    const ns = await namespace(h);
    await set(ns.name, "user_1");
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE id = ?", [Date.now(), ns.id]);
    expectOverrideNotFound(h, await get(ns.name, "user_1"));
  });

  it("another workspace's namespace -> the same 404", async () => {
    const ns = await namespace(h);
    await set(ns.name, "user_1");
    expectOverrideNotFound(h, await get(ns.name, "user_1", await foreignAdmin(h)));
  });

  // Denial is masked as not-found (docs/auth.md, "401 or 403"): a caller without the read grant
  // cannot tell an existing override from a missing one.
  it("a root key without read_override -> the same 404, for an existing override too", async () => {
    const ns = await namespace(h);
    await set(ns.name, "user_1");
    const wrong = await h.rootKey(["ratelimit.*.set_override", "ratelimit.*.delete_override", "ratelimit.*.limit"]);
    expectOverrideNotFound(h, await get(ns.name, "user_1", wrong));
    const otherNamespace = await namespace(h);
    expectOverrideNotFound(h, await get(ns.name, "user_1", await h.rootKey([`ratelimit.${otherNamespace.id}.read_override`])));
  });
});
