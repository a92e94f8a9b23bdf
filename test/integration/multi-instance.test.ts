// Two keyhold instances on one database, as behind a load balancer: credits are
// exact across them, and a change made on one is seen by the other within 1 s.
import { describe, expect, inject, it, vi } from "vitest";
import { api, key, midMinute } from "../fixtures.js";
import { type Instance, useHarness } from "../harness.js";

describe("two instances on one database", () => {
  const h = useHarness();

  async function pair(): Promise<{ b: Instance; rk: string }> {
    const b = await h.otherInstance();
    // Both poll the invalidation log, as main.ts does.
    await h.runtime.invalidations.start(250);
    await b.runtime.invalidations.start(250);
    return { b, rk: await h.rootKey(["*"]) };
  }

  /** Polls fn until it is true, for at most `ms`; returns how long it took. */
  async function within(ms: number, fn: () => Promise<boolean>): Promise<number> {
    const start = Date.now();
    for (;;) {
      if (await fn()) return Date.now() - start;
      if (Date.now() - start > ms) throw new Error(`not seen within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("200 verifications of a key with 50 credits, alternating between the instances, give exactly 50 VALID", async () => {
    const { b, rk } = await pair();
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 50 } });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? h.post : b.post)("/v2/keys.verifyKey", { key: k.key }, rk)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.body.data.code === "VALID")).toHaveLength(50);
    expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.credits.remaining).toBe(0);
  });

  it("disabling, updating and deleting a key on A is seen by a verification on B within 1 s", async () => {
    const { b, rk } = await pair();
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { name: "before" });
    const onB = async () => (await b.post("/v2/keys.verifyKey", { key: k.key }, rk)).body.data;
    expect((await onB()).code).toBe("VALID"); // now cached on B

    await h.post("/v2/keys.updateKey", { keyId: k.keyId, enabled: false }, rk);
    await within(1000, async () => (await onB()).code === "DISABLED");
    await h.post("/v2/keys.updateKey", { keyId: k.keyId, enabled: true, name: "after" }, rk);
    await within(1000, async () => (await onB()).name === "after");
    await h.post("/v2/keys.deleteKey", { keyId: k.keyId }, rk);
    await within(1000, async () => (await onB()).code === "NOT_FOUND");
  });

  it("a reroll, an identity change and a role deletion on A reach B within 1 s", async () => {
    const { b, rk } = await pair();
    const apiId = await api(h, rk);
    await h.post("/v2/permissions.createRole", { name: "reader", permissions: ["docs.read"] }, rk);
    await h.post("/v2/identities.createIdentity", { externalId: "mi_user", meta: { tier: "free" } }, rk);
    const k = await key(h, rk, apiId, { roles: ["reader"], externalId: "mi_user" });
    const onB = async (extra: Record<string, unknown> = {}) => (await b.post("/v2/keys.verifyKey", { key: k.key, ...extra }, rk)).body.data;
    expect((await onB({ permissions: "docs.read" })).code).toBe("VALID");

    await h.post("/v2/identities.updateIdentity", { identity: "mi_user", meta: { tier: "pro" } }, rk);
    await within(1000, async () => (await onB()).identity?.meta?.tier === "pro");
    await h.post("/v2/permissions.deleteRole", { role: "reader" }, rk);
    await within(1000, async () => (await onB({ permissions: "docs.read" })).code === "INSUFFICIENT_PERMISSIONS");
    await h.post("/v2/keys.rerollKey", { keyId: k.keyId, expiration: 0 }, rk);
    await within(1000, async () => (await onB()).code === "EXPIRED");
  });

  it("an override set on A applies to ratelimit.limit on B within 1 s", async () => {
    const { b, rk } = await pair();
    const body = { namespace: "mi_ns", identifier: "vip", limit: 5, duration: 60_000 };
    expect((await b.post("/v2/ratelimit.limit", body, rk)).body.data.limit).toBe(5);
    await h.post("/v2/ratelimit.setOverride", { namespace: "mi_ns", identifier: "vip", limit: 500, duration: 60_000 }, rk);
    await within(1000, async () => (await b.post("/v2/ratelimit.limit", body, rk)).body.data.limit === 500);
  });

  it("an API deleted on A stops taking new keys on B within 1 s, though B had it cached", async () => {
    const { b, rk } = await pair();
    const apiId = await api(h, rk);
    const onB = () => b.post("/v2/keys.createKey", { apiId }, rk);
    expect((await onB()).status).toBe(200); // the API is now cached on B
    expect(b.runtime.deps.apiCache.size).toBeGreaterThan(0);
    expect((await h.post("/v2/apis.deleteApi", { apiId }, rk)).status).toBe(200);
    // On A, at once: its own cache was evicted before deleteApi answered.
    expect((await h.post("/v2/keys.createKey", { apiId }, rk)).body.error?.type).toContain("api_not_found");
    await within(1000, async () => (await onB()).status === 404);
  });

  it("a root key revoked through the invalidation log stops working on both within 1 s", async () => {
    const { b } = await pair();
    const victim = await h.rootKey(["apis.*.read_api"]);
    const probe = (inst: { post: Instance["post"] }) => inst.post("/v2/apis.getApi", { apiId: "api_nothing_here" }, victim);
    expect((await probe(b)).status).toBe(404); // authenticated, and cached on B
    const [row] = (await h.db.pool.query("SELECT id, hash FROM root_keys ORDER BY pk DESC LIMIT 1")) as unknown as [Array<{ id: string; hash: string }>];
    await h.db.pool.query("UPDATE root_keys SET deleted_at_m = ? WHERE id = ?", [Date.now(), row[0]?.id]);
    await h.db.pool.query("INSERT INTO cache_invalidations (kind, cache_key, created_at_m) VALUES ('rootkey', ?, ?)", [row[0]?.hash, Date.now()]);
    await within(1000, async () => (await probe(b)).status === 401);
    await within(1000, async () => (await probe(h)).status === 401);
  });
});

describe.skipIf(inject("redisUrl") === "")("two instances sharing Redis", () => {
  const h = useHarness();
  const REDIS = inject("redisUrl");

  it("100 parallel verifications alternating between two instances against 20 per minute give exactly 20 VALID", async () => {
    const a = await h.otherInstance({ REDIS_URL: REDIS });
    const b = await h.otherInstance({ REDIS_URL: REDIS });
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { ratelimits: [{ name: "shared_minute", limit: 20, duration: 60_000 }] });
    // A fixed clock mid-window on both, so the test never straddles a window edge.
    const now = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
    for (const inst of [a, b]) (inst.deps as { clock: { now(): number } }).clock = { now: () => now };
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).post("/v2/keys.verifyKey", { key: k.key }, rk)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.body.data.code === "VALID")).toHaveLength(20);
    // ratelimit.limit is shared the same way.
    const body = { namespace: "shared_ns", identifier: "user_1", limit: 10, duration: 60_000 };
    const limits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).post("/v2/ratelimit.limit", body, rk)));
    expect(limits.filter((r) => r.body.data.success)).toHaveLength(10);
  });

  it("with Redis unreachable, verification keeps answering, limits locally and says it is degraded", async () => {
    const a = await h.otherInstance({ REDIS_URL: "redis://127.0.0.1:1" });
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { ratelimits: [{ name: "local_minute", limit: 3, duration: 60_000 }] });
    const now = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
    (a.deps as { clock: { now(): number } }).clock = { now: () => now };
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await a.post("/v2/keys.verifyKey", { key: k.key }, rk)).body.data.code);
    expect(codes).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED", "RATE_LIMITED"]);
    const live = await a.app.inject({ method: "GET", url: "/v2/liveness" });
    expect(live.statusCode).toBe(200);
    expect(JSON.parse(live.body).data.degraded).toContain("redis");
  });
});

// REDIS_URL=redis-cluster://…: a private 3-master cluster (test/redis-cluster.ts).
// A key's own limit and its identity's limit hash to different slots, so each
// verification is checked slot by slot; with the counts falling back to each
// instance's own memory, these tests would see twice the limit.
describe.skipIf(inject("redisClusterUrl") === "")("two instances sharing a Redis Cluster", () => {
  const h = useHarness();
  const CLUSTER = inject("redisClusterUrl");
  // Exactness is what is tested here, not the fallback: on a CI machine running
  // every test file at once, a script call can take longer than the default 200 ms.
  const env = { REDIS_URL: CLUSTER, REDIS_COMMAND_TIMEOUT_MS: "2000" };

  it("a key's limit with its identity's, in one slot (the identity's tag): 100 parallel verifications on two instances give exactly the tighter limit", async () => {
    const a = await h.otherInstance(env);
    const b = await h.otherInstance(env);
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const identity = await h.post(
      "/v2/identities.createIdentity",
      { externalId: "cluster_user", ratelimits: [{ name: "per_user", limit: 15, duration: 60_000, autoApply: true }] },
      rk,
    );
    expect(identity.status, identity.text).toBe(200);
    const k = await key(h, rk, apiId, { externalId: "cluster_user", ratelimits: [{ name: "per_key", limit: 40, duration: 60_000, autoApply: true }] });
    const other = await key(h, rk, apiId, { externalId: "cluster_user" });
    const now = midMinute();
    for (const inst of [a, b]) (inst.deps as { clock: { now(): number } }).clock = { now: () => now };
    // What each instance sends to Redis: every verification one group of both checks.
    const sent = [a, b].map((inst) => vi.spyOn(inst.deps.limiter as unknown as { send(groups: { size: number }[]): Promise<void> }, "send"));
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).post("/v2/keys.verifyKey", { key: k.key }, rk)));
    const sizes = sent.flatMap((spy) => spy.mock.calls.flatMap(([groups]) => groups.map((g) => g.size)));
    expect(sizes).toHaveLength(100);
    expect(new Set(sizes)).toEqual(new Set([2]));
    expect(results.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
    expect(
      results.filter((r) => r.body.data.code === "VALID"),
      JSON.stringify(results.slice(0, 3).map((r) => r.body.data)),
    ).toHaveLength(15);
    // The identity's 15 are spent for all its keys, on both instances.
    expect((await b.post("/v2/keys.verifyKey", { key: other.key }, rk)).body.data.code).toBe("RATE_LIMITED");
    for (const inst of [a, b]) {
      const ready = await inst.app.inject({ method: "GET", url: "/readyz" });
      expect(ready.statusCode, ready.body).toBe(200);
    }
  });

  it("ratelimit.multiLimit over two namespaces is all-or-nothing across slots: exactly the tighter limit passes, the other counter gets its count back", async () => {
    const a = await h.otherInstance(env);
    const b = await h.otherInstance(env);
    const rk = await h.rootKey(["*"]);
    const now = midMinute();
    for (const inst of [a, b]) (inst.deps as { clock: { now(): number } }).clock = { now: () => now };
    const body = [
      { namespace: "cluster_wide", identifier: "u1", limit: 50, duration: 60_000 },
      { namespace: "cluster_narrow", identifier: "u1", limit: 10, duration: 60_000 },
    ];
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).post("/v2/ratelimit.multiLimit", body, rk)));
    expect(results.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
    expect(results.filter((r) => r.body.data.passed)).toHaveLength(10);
    // Only the 10 that passed both are counted on the wide limit: 40 remain of 50.
    const probe = await a.post("/v2/ratelimit.limit", { ...body[0], cost: 0 }, rk);
    expect(probe.body.data.remaining).toBe(40);
  });
});
