import { describe, it } from "vitest";
import type { Harness, Res } from "../../harness.js";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin, uid } from "../shared/helpers.js";

const DETAIL = "The requested rate limit override could not be found";
const expectOverrideNotFound = (h: Harness, res: Res) => expectError(h, res, 404, "err:svc:data:ratelimit_override_not_found", DETAIL);

describe("ratelimit.deleteOverride 404", () => {
  const h = useHarness();

  async function namespace(): Promise<string> {
    const name = uid("ns");
    expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
    return name;
  }
  const set = async (namespaceId: string, identifier: string) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId, identifier, limit: 1, duration: 60_000 }, await admin(h)));
  const del = async (namespaceId: string, identifier: string, rootKey?: string) =>
    h.post("/v2/ratelimit.deleteOverride", { namespaceId, identifier }, rootKey ?? (await admin(h)));

  it("an identifier without an override -> 404 override_not_found", async () => {
    const ns = await namespace();
    expectOverrideNotFound(h, await del(ns, "nobody"));
  });

  it("a second delete -> 404", async () => {
    const ns = await namespace();
    await set(ns, "once");
    expectOk(await del(ns, "once"));
    expectOverrideNotFound(h, await del(ns, "once"));
  });

  // deleteOverride matches exactly (docs/ratelimits.md, "Overrides"): a pattern that would match is not deleted.
  it("an identifier covered only by a wildcard override -> 404", async () => {
    const ns = await namespace();
    await set(ns, "premium_*");
    expectOverrideNotFound(h, await del(ns, "premium_1"));
  });

  // Every way of not finding the override is the same 404, an unknown or deleted
  // namespace included (docs/errors.md, "Codes").
  it("an unknown namespace -> override_not_found, not namespace_not_found", async () => {
    expectOverrideNotFound(h, await del(uid("nons"), "x"));
  });

  it("a soft-deleted namespace -> override_not_found", async () => {
    const ns = await namespace();
    await set(ns, "x");
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE name = ?", [Date.now(), ns]);
    expectOverrideNotFound(h, await del(ns, "x"));
  });

  it("another workspace's namespace -> override_not_found", async () => {
    const ns = await namespace();
    await set(ns, "x");
    expectOverrideNotFound(h, await del(ns, "x", await foreignAdmin(h)));
  });
});
