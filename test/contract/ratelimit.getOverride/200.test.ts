import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, namespace } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.getOverride 200", () => {
  const h = useHarness();

  const set = async (namespace: string, identifier: string, limit: number) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespace, identifier, limit, duration: MINUTE }, await admin(h))).overrideId as string;
  const get = async (namespace: string, identifier: string, rootKey?: string) =>
    expectOk(await h.post("/v2/ratelimit.getOverride", { namespace, identifier }, rootKey ?? (await h.rootKey(["ratelimit.*.read_override"]))));

  it("returns the whole override: overrideId, identifier, limit, duration (and namespaceId)", async () => {
    const ns = await namespace(h);
    const overrideId = await set(ns.name, "user_1", 3);
    expect(await get(ns.name, "user_1")).toEqual({ overrideId, identifier: "user_1", limit: 3, duration: MINUTE, namespaceId: ns.id });
    expect(await get(ns.id, "user_1")).toEqual(await get(ns.name, "user_1"));
  });

  it("resolves wildcards: premium_42 finds premium_*, and the pattern itself matches exactly", async () => {
    const ns = await namespace(h);
    const any = await set(ns.name, "*", 1);
    const premium = await set(ns.name, "premium_*", 5);
    const exact = await set(ns.name, "premium_7", 9);
    expect(await get(ns.name, "premium_42")).toMatchObject({ overrideId: premium, identifier: "premium_*", limit: 5 });
    expect((await get(ns.name, "premium_*")).overrideId).toBe(premium);
    expect((await get(ns.name, "premium_7")).overrideId).toBe(exact);
    expect((await get(ns.name, "someone")).overrideId).toBe(any);
    expect((await get(ns.name, "*")).overrideId).toBe(any);
  });

  it("regular-expression characters in a pattern are literal", async () => {
    const ns = await namespace(h);
    const dotted = await set(ns.name, "a.b*", 2);
    expect((await get(ns.name, "a.bc")).overrideId).toBe(dotted);
    const res = await h.post("/v2/ratelimit.getOverride", { namespace: ns.name, identifier: "aXbc" }, await admin(h));
    expect(res.status).toBe(404);
  });

  it("a read_override grant on the namespace id is enough", async () => {
    const ns = await namespace(h);
    const overrideId = await set(ns.name, "scoped", 1);
    const rk = await h.rootKey([`ratelimit.${ns.id}.read_override`]);
    expect((await get(ns.name, "scoped", rk)).overrideId).toBe(overrideId);
  });
});
