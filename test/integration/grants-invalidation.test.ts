// Grant changes and the verification cache (docs/caching.md, src/domain/keys/grants.ts):
// after each of keys.addPermissions, removePermissions, setPermissions, addRoles,
// removeRoles and setRoles, the very next keys.verifyKey with a `permissions`
// query on this instance sees the change, although the key's record was cached
// with the old grants. And a verification refused with INSUFFICIENT_PERMISSIONS
// spends neither rate-limit tokens nor credits (docs/permissions.md, "The permission query of `keys.verifyKey`").
import { describe, expect, it } from "vitest";
import { MISS } from "../../src/cache/verification-cache.js";
import type { KeyRecord } from "../../src/core/records.js";
import { hashKey } from "../../src/domain/keys/generate.js";
import { evaluateQuery, parseQuery } from "../../src/domain/keys/permission-query.js";
import { admin, awayFromWindowEdge, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

type Code = "VALID" | "INSUFFICIENT_PERMISSIONS";

interface Step {
  op: string;
  body: Record<string, unknown>;
  /** What the next verification with the query answers. */
  expected: Code;
}

interface Scenario {
  /** createKey fields, apart from credits and rate limits. */
  key: (roles: { docs: string }) => Record<string, unknown>;
  before: Code;
  steps: (roles: { docs: string }) => Step[];
}

const QUERY = "documents.read AND documents.share";

const SCENARIOS: Record<string, Scenario> = {
  addPermissions: {
    key: () => ({ permissions: ["billing.read"] }),
    before: "INSUFFICIENT_PERMISSIONS",
    steps: () => [{ op: "addPermissions", body: { permissions: ["documents.*"] }, expected: "VALID" }],
  },
  removePermissions: {
    key: () => ({ permissions: ["documents.*", "billing.read"] }),
    before: "VALID",
    steps: () => [{ op: "removePermissions", body: { permissions: ["documents.*"] }, expected: "INSUFFICIENT_PERMISSIONS" }],
  },
  setPermissions: {
    key: () => ({ permissions: ["documents.read"] }),
    before: "INSUFFICIENT_PERMISSIONS",
    steps: () => [
      { op: "setPermissions", body: { permissions: ["documents.read", "documents.share"] }, expected: "VALID" },
      { op: "setPermissions", body: { permissions: ["documents.share"] }, expected: "INSUFFICIENT_PERMISSIONS" },
      { op: "setPermissions", body: { permissions: ["*"] }, expected: "VALID" },
      { op: "setPermissions", body: { permissions: [] }, expected: "INSUFFICIENT_PERMISSIONS" },
    ],
  },
  addRoles: {
    key: () => ({}),
    before: "INSUFFICIENT_PERMISSIONS",
    steps: ({ docs }) => [{ op: "addRoles", body: { roles: [docs] }, expected: "VALID" }],
  },
  removeRoles: {
    key: ({ docs }) => ({ roles: [docs] }),
    before: "VALID",
    steps: ({ docs }) => [{ op: "removeRoles", body: { roles: [docs] }, expected: "INSUFFICIENT_PERMISSIONS" }],
  },
  setRoles: {
    key: () => ({ permissions: ["documents.read"] }),
    before: "INSUFFICIENT_PERMISSIONS",
    steps: ({ docs }) => [
      { op: "setRoles", body: { roles: [docs] }, expected: "VALID" },
      { op: "setRoles", body: { roles: [] }, expected: "INSUFFICIENT_PERMISSIONS" },
      { op: "setRoles", body: { roles: [docs] }, expected: "VALID" },
    ],
  },
};

describe("grant changes are seen by the very next verification", () => {
  const h = useHarness();

  /** The record the verification cache holds for this key (undefined when not cached). */
  const cached = (key: string): KeyRecord | undefined => {
    const v = h.deps.keyCache.get(hashKey(key));
    return v === MISS ? undefined : v;
  };

  it.each(Object.keys(SCENARIOS))("keys.%s flips VALID <-> INSUFFICIENT_PERMISSIONS at once; refusals spend nothing", async (name) => {
    const s = SCENARIOS[name] as Scenario;
    const rk = await admin(h);
    const docs = uid("docs_role");
    await seedRole(h, docs, ["documents.*"]);
    const apiId = await createApi(h);
    await awayFromWindowEdge(60_000, 8_000);
    const { keyId, key } = await createKey(h, apiId, {
      ...s.key({ docs }),
      credits: { remaining: 100 },
      ratelimits: [{ name: "requests", limit: 100, duration: 60_000 }],
    });

    let spent = 0;
    const check = async (expected: Code): Promise<void> => {
      const data = await verifyKey(h, key, { permissions: QUERY });
      if (expected === "VALID") {
        spent++;
        expect(data).toMatchObject({ valid: true, code: "VALID", keyId, credits: 100 - spent });
        expect(data.ratelimits).toEqual([expect.objectContaining({ name: "requests", remaining: 100 - spent, exceeded: false })]);
      } else {
        // Refused before the rate limits and the credits: the balance is unchanged,
        // and no limit was checked.
        expect(data).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", keyId, credits: 100 - spent });
        expect(data.ratelimits).toBeUndefined();
      }
    };

    // Twice, so the second answer comes from the cache.
    await check(s.before);
    await check(s.before);
    let previous = s.before;
    for (const step of s.steps({ docs })) {
      // The cached record still holds the old grants: only the eviction can make the next verification right.
      const before = cached(key);
      expect(before, "the key should be cached before the change").toBeDefined();
      expect(evaluateQuery(parseQuery(QUERY), before?.permissions ?? [])).toBe(previous === "VALID");

      expectOk(await h.post(`/v2/keys.${step.op}`, { keyId, ...step.body }, rk));
      expect(cached(key), `keys.${step.op} must evict the key`).toBeUndefined();
      await check(step.expected);
      await check(step.expected); // and again, from the refreshed cache entry
      previous = step.expected;
    }

    // Refused verifications spent nothing: one more plain verification sees exactly the VALID ones.
    const last = await verifyKey(h, key);
    expect(last).toMatchObject({ code: "VALID", credits: 100 - spent - 1 });
    expect(last.ratelimits).toEqual([expect.objectContaining({ name: "requests", remaining: 100 - spent - 1 })]);
    expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(100 - spent - 1);
  });

  it("denied verifications spend neither the only rate-limit token nor the only credit", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    await awayFromWindowEdge(60_000, 8_000);
    const { keyId, key } = await createKey(h, apiId, {
      credits: { remaining: 1 },
      ratelimits: [{ name: "requests", limit: 1, duration: 60_000 }],
    });
    for (let i = 0; i < 5; i++) {
      const data: Json = await verifyKey(h, key, { permissions: "documents.read" });
      expect(data).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", credits: 1 });
    }
    expectOk(await h.post("/v2/keys.addPermissions", { keyId, permissions: ["documents.read"] }, rk));
    // The single token and the single credit are both still there.
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: true, code: "VALID", credits: 0 });
    // Now the limit is used up: the limit was real, it had simply not been touched.
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "RATE_LIMITED", credits: 0 });

    // Taking the permission away again refuses before the rate limit and credits are even looked at.
    expectOk(await h.post("/v2/keys.removePermissions", { keyId, permissions: ["documents.read"] }, rk));
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", credits: 0 });
  });

  it("a failed grant change (unknown role or slug) leaves the cached answer right", async () => {
    const rk = await admin(h);
    const docs = uid("docs_role");
    await seedRole(h, docs, ["documents.*"]);
    const { keyId, key } = await createKey(h, await createApi(h), { roles: [docs] });
    expect(await verifyKey(h, key, { permissions: QUERY })).toMatchObject({ code: "VALID" });
    expect((await h.post("/v2/keys.setRoles", { keyId, roles: [uid("ghost")] }, rk)).status).toBe(404);
    expect((await h.post("/v2/keys.removeRoles", { keyId, roles: [docs, uid("ghost")] }, rk)).status).toBe(404);
    expect((await h.post("/v2/keys.removePermissions", { keyId, permissions: [uid("ghost.read")] }, rk)).status).toBe(404);
    expect(await verifyKey(h, key, { permissions: QUERY })).toMatchObject({ valid: true, code: "VALID" });
  });
});
