import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, namespace } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.deleteOverride 200", () => {
  const h = useHarness();

  const set = async (namespaceId: string, identifier: string) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId, identifier, limit: 1, duration: MINUTE }, await admin(h))).overrideId as string;
  const del = async (body: Record<string, unknown>, rootKey?: string) =>
    expectOk(await h.post("/v2/ratelimit.deleteOverride", body, rootKey ?? (await h.rootKey(["ratelimit.*.delete_override"]))));

  it("answers data {}; the override is gone from get and list", async () => {
    const ns = await namespace(h);
    await set(ns.name, "temp");
    const keep = await set(ns.name, "keep");
    expect(await del({ namespaceId: ns.name, identifier: "temp" })).toEqual({});
    expect((await h.post("/v2/ratelimit.getOverride", { namespaceId: ns.name, identifier: "temp" }, await admin(h))).status).toBe(404);
    const listed = expectOk(await h.post("/v2/ratelimit.listOverrides", { namespaceId: ns.name }, await admin(h)), { pagination: true });
    expect(listed.map((o: { overrideId: string }) => o.overrideId)).toEqual([keep]);
  });

  it("matches the identifier exactly: deleting a pattern removes the pattern only", async () => {
    const ns = await namespace(h);
    await set(ns.name, "premium_*");
    const exact = await set(ns.name, "premium_1");
    await del({ namespace: ns.id, identifier: "premium_*" });
    const got = expectOk(await h.post("/v2/ratelimit.getOverride", { namespaceId: ns.name, identifier: "premium_1" }, await admin(h)));
    expect(got.overrideId).toBe(exact);
    expect((await h.post("/v2/ratelimit.getOverride", { namespaceId: ns.name, identifier: "premium_2" }, await admin(h))).status).toBe(404);
  });

  it("a delete_override grant on the namespace id is enough", async () => {
    const ns = await namespace(h);
    await set(ns.name, "scoped");
    expect(await del({ namespaceName: ns.name, identifier: "scoped" }, await h.rootKey([`ratelimit.${ns.id}.delete_override`]))).toEqual({});
  });
});
