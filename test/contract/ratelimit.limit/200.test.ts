import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, expectOk, uid } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.limit 200", () => {
  const h = useHarness();
  const limit = async (body: Record<string, unknown>, rootKey?: string) => expectOk(await h.post("/v2/ratelimit.limit", body, rootKey ?? (await admin(h))));
  const setOverride = async (namespace: string, identifier: string, lim: number, duration = MINUTE): Promise<string> =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespace, identifier, limit: lim, duration }, await admin(h))).overrideId;

  it("allows up to the limit, then success:false (still HTTP 200); reset is the window's end", async () => {
    const body = { namespace: uid("ns"), identifier: "user_1", limit: 2, duration: MINUTE };
    await awayFromWindowEdge(MINUTE);
    const windowEnd = (Math.floor(Date.now() / MINUTE) + 1) * MINUTE;
    expect(await limit(body)).toEqual({ limit: 2, remaining: 1, reset: windowEnd, success: true });
    expect(await limit(body)).toEqual({ limit: 2, remaining: 0, reset: windowEnd, success: true });
    expect(await limit(body)).toEqual({ limit: 2, remaining: 0, reset: windowEnd, success: false });
  });

  it("counts identifiers and namespaces separately", async () => {
    const namespace = uid("ns");
    await awayFromWindowEdge(MINUTE);
    expect((await limit({ namespace, identifier: "a", limit: 1, duration: MINUTE })).success).toBe(true);
    expect((await limit({ namespace, identifier: "a", limit: 1, duration: MINUTE })).success).toBe(false);
    expect((await limit({ namespace, identifier: "b", limit: 1, duration: MINUTE })).success).toBe(true);
    expect((await limit({ namespace: uid("ns"), identifier: "a", limit: 1, duration: MINUTE })).success).toBe(true);
  });

  // The counter's name is kept with the cached override candidates for the duration of their first check (limit.ts).
  it("the same identifier with another duration is another counter, and each keeps its count", async () => {
    const a = { namespace: uid("ns"), identifier: "a", limit: 1, duration: MINUTE };
    const b = { ...a, duration: 2 * MINUTE };
    await awayFromWindowEdge(MINUTE);
    expect((await limit(a)).success).toBe(true);
    expect((await limit(b)).success).toBe(true);
    expect((await limit(a)).success).toBe(false);
    expect((await limit(b)).success).toBe(false);
  });

  it("cost is consumed as given; cost 0 checks without consuming", async () => {
    const base = { namespace: uid("ns"), identifier: "tokens", limit: 10, duration: MINUTE };
    await awayFromWindowEdge(MINUTE);
    expect(await limit({ ...base, cost: 7 })).toMatchObject({ success: true, remaining: 3 });
    expect(await limit({ ...base, cost: 0 })).toMatchObject({ success: true, remaining: 3 });
    expect(await limit({ ...base, cost: 4 })).toMatchObject({ success: false, remaining: 0 });
    expect(await limit({ ...base, cost: 3 })).toMatchObject({ success: true, remaining: 0 });
    // At exactly the limit, cost 0 still passes.
    expect(await limit({ ...base, cost: 0 })).toMatchObject({ success: true, remaining: 0 });
  });

  it("the namespace is created on first use and can then be named by its id", async () => {
    const name = uid("ns");
    await awayFromWindowEdge(MINUTE);
    await limit({ namespace: name, identifier: "x", limit: 2, duration: MINUTE });
    const [row] = (await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE workspace_id = ? AND name = ?", [h.workspaceId, name]))[0] as Array<{
      id: string;
    }>;
    expect(row?.id).toMatch(/^rlns_/);
    // The same counter, whichever way the namespace is named.
    expect(await limit({ namespace: row?.id, identifier: "x", limit: 2, duration: MINUTE })).toMatchObject({ success: true, remaining: 0 });
  });

  it("an exact override replaces limit and duration and is reported as overrideId", async () => {
    const namespace = uid("ns");
    await limit({ namespace, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 });
    const overrideId = await setOverride(namespace, "vip", 3, 2 * MINUTE);
    await awayFromWindowEdge(2 * MINUTE);
    const first = await limit({ namespace, identifier: "vip", limit: 100, duration: 1000 });
    expect(first).toEqual({ limit: 3, remaining: 2, reset: (Math.floor(Date.now() / (2 * MINUTE)) + 1) * 2 * MINUTE, success: true, overrideId });
    // Another identifier is unaffected and reports no overrideId.
    expect(await limit({ namespace, identifier: "plain", limit: 100, duration: MINUTE })).not.toHaveProperty("overrideId");
  });

  it("wildcards: exact beats pattern; the most specific pattern wins", async () => {
    const namespace = uid("ns");
    await limit({ namespace, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 });
    const any = await setOverride(namespace, "*", 1);
    const premium = await setOverride(namespace, "premium_*", 5);
    const premium4 = await setOverride(namespace, "premium_4*", 7);
    const exact = await setOverride(namespace, "premium_42", 9);
    const applied = async (identifier: string) => (await limit({ namespace, identifier, limit: 100, duration: MINUTE, cost: 0 })).overrideId;
    expect(await applied("premium_42")).toBe(exact);
    expect(await applied("premium_43")).toBe(premium4);
    expect(await applied("premium_1")).toBe(premium);
    expect(await applied("free_1")).toBe(any);
  });

  it("an override with limit 0 always denies, even at cost 0", async () => {
    const namespace = uid("ns");
    await limit({ namespace, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 });
    const overrideId = await setOverride(namespace, "blocked_*", 0);
    expect(await limit({ namespace, identifier: "blocked_1", limit: 100, duration: MINUTE })).toMatchObject({
      success: false,
      remaining: 0,
      limit: 0,
      overrideId,
    });
    expect((await limit({ namespace, identifier: "blocked_1", limit: 100, duration: MINUTE, cost: 0 })).success).toBe(false);
  });

  // Override changes evict the namespace's cached overrides (docs/caching.md): they apply to the very next request.
  it("setOverride and deleteOverride take effect on the next limit call", async () => {
    const namespace = uid("ns");
    const body = { namespace, identifier: "switch", limit: 100, duration: MINUTE, cost: 0 };
    await limit(body);
    const overrideId = await setOverride(namespace, "switch", 0);
    expect(await limit(body)).toMatchObject({ success: false, overrideId });
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespace, identifier: "switch", limit: 50, duration: MINUTE }, await admin(h)));
    expect(await limit(body)).toMatchObject({ success: true, limit: 50, overrideId });
    expectOk(await h.post("/v2/ratelimit.deleteOverride", { namespace, identifier: "switch" }, await admin(h)));
    const after = await limit(body);
    expect(after).toMatchObject({ success: true, limit: 100 });
    expect(after).not.toHaveProperty("overrideId");
  });

  it("works with exactly the grants the contract names", async () => {
    const rk = await h.rootKey(["ratelimit.*.limit", "ratelimit.*.create_namespace"]);
    expect((await limit({ namespace: uid("ns"), identifier: "x", limit: 1, duration: 1000 }, rk)).success).toBe(true);
  });

  it("a grant on one namespace id allows limiting in that namespace, without create_namespace", async () => {
    const name = uid("ns");
    await limit({ namespace: name, identifier: "seed", limit: 1, duration: MINUTE, cost: 0 });
    const [row] = (await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]))[0] as Array<{ id: string }>;
    const rk = await h.rootKey([`ratelimit.${row?.id}.limit`]);
    expect((await limit({ namespace: name, identifier: "x", limit: 1, duration: 1000 }, rk)).success).toBe(true);
  });

  it("accepts the bounds: duration 1000 and 2592000000 ms, identifier and namespace of 512 characters", async () => {
    expect((await limit({ namespace: uid("ns"), identifier: "x", limit: 1, duration: 1000 })).success).toBe(true);
    expect((await limit({ namespace: uid("ns"), identifier: "x", limit: 1, duration: 2_592_000_000 })).success).toBe(true);
    expect((await limit({ namespace: "n".repeat(512), identifier: "é".repeat(512), limit: 1, duration: MINUTE })).success).toBe(true);
  });

  it("concurrent requests never allow more than the limit", async () => {
    const body = { namespace: uid("ns"), identifier: "burst", limit: 5, duration: MINUTE };
    await awayFromWindowEdge(MINUTE);
    const results = await Promise.all(Array.from({ length: 20 }, async () => (await limit(body)).success));
    expect(results.filter(Boolean)).toHaveLength(5);
  });
});
