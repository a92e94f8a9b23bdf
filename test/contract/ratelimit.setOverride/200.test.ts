import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, namespace } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.setOverride 200", () => {
  const h = useHarness();

  const set = async (body: Record<string, unknown>, rootKey?: string) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", body, rootKey ?? (await admin(h)))).overrideId as string;
  const get = async (namespaceId: string, identifier: string) =>
    expectOk(await h.post("/v2/ratelimit.getOverride", { namespaceId, identifier }, await admin(h)));

  it("returns an overrideId that getOverride reads back", async () => {
    const ns = await namespace(h);
    const overrideId = await set({ namespaceId: ns.name, identifier: "user_42", limit: 7, duration: 30_000 });
    expect(overrideId).toMatch(/^rlor_/);
    expect(await get(ns.name, "user_42")).toEqual({ overrideId, identifier: "user_42", limit: 7, duration: 30_000, namespaceId: ns.id });
  });

  it("accepts the namespace as namespaceId, namespace or namespaceName, each a name or an id", async () => {
    const ns = await namespace(h);
    const a = await set({ namespaceId: ns.id, identifier: "a", limit: 1, duration: MINUTE });
    const b = await set({ namespace: ns.name, identifier: "b", limit: 1, duration: MINUTE });
    const c = await set({ namespaceName: ns.name, identifier: "c", limit: 1, duration: MINUTE });
    const d = await set({ namespace: ns.id, identifier: "d", limit: 1, duration: MINUTE });
    expect((await get(ns.id, "a")).overrideId).toBe(a);
    expect((await get(ns.id, "b")).overrideId).toBe(b);
    expect((await get(ns.name, "c")).overrideId).toBe(c);
    expect((await get(ns.name, "d")).overrideId).toBe(d);
  });

  it("is an upsert: setting an identifier again updates it and keeps its id", async () => {
    const ns = await namespace(h);
    const first = await set({ namespaceId: ns.name, identifier: "same", limit: 5, duration: MINUTE });
    const second = await set({ namespaceId: ns.id, identifier: "same", limit: 9, duration: 2 * MINUTE });
    expect(second).toBe(first);
    expect(await get(ns.name, "same")).toMatchObject({ overrideId: first, limit: 9, duration: 2 * MINUTE });
    const listed = expectOk(await h.post("/v2/ratelimit.listOverrides", { namespaceId: ns.name }, await admin(h)), { pagination: true });
    expect(listed).toHaveLength(1);
  });

  // Unkey leaves a re-set override soft-deleted; here it comes back, with its id (docs/ratelimits.md, "Overrides").
  it("setting a deleted override again revives it", async () => {
    const ns = await namespace(h);
    const first = await set({ namespaceId: ns.name, identifier: "phoenix", limit: 1, duration: MINUTE });
    expectOk(await h.post("/v2/ratelimit.deleteOverride", { namespaceId: ns.name, identifier: "phoenix" }, await admin(h)));
    const again = await set({ namespaceId: ns.name, identifier: "phoenix", limit: 4, duration: MINUTE });
    expect(again).toBe(first);
    expect(await get(ns.name, "phoenix")).toMatchObject({ overrideId: first, limit: 4 });
  });

  it("accepts limit 0 (block), wildcard patterns, 512-character identifiers and long durations", async () => {
    const ns = await namespace(h);
    await set({ namespaceId: ns.name, identifier: "blocked", limit: 0, duration: 1000 });
    await set({ namespaceId: ns.name, identifier: "premium_*", limit: 100, duration: MINUTE });
    await set({ namespaceId: ns.name, identifier: "x".repeat(512), limit: 1, duration: 90 * 24 * 3_600_000 });
    expect((await get(ns.name, "blocked")).limit).toBe(0);
    expect((await get(ns.name, "premium_gold")).identifier).toBe("premium_*");
  });

  it("a set_override grant on the namespace id is enough", async () => {
    const ns = await namespace(h);
    const rk = await h.rootKey([`ratelimit.${ns.id}.set_override`]);
    expect(await set({ namespaceId: ns.name, identifier: "scoped", limit: 1, duration: MINUTE }, rk)).toMatch(/^rlor_/);
  });
});
