// The verification cache: a hot key costs no SQL, a flood of one unknown key
// costs at most one statement, and every change made through keyhold is seen
// by the very next verification on this instance (docs/caching.md).
import { describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { keyRecordByHash } from "../../src/domain/keys/lookup.js";
import { softDeleteRootKey } from "../../src/storage/root-keys.js";
import { admin, createApi, createKey, expectError, expectOk, verifyKey } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

describe("verification cache", () => {
  const h = useHarness();

  /** Usage (last-used) writes sit behind a 1 s timer: flush them so they do not land in a counted window. */
  const settle = () => Promise.all([h.deps.usage.flush(), h.deps.rootKeyUsage.flush(), h.deps.analytics.flush()]);

  it("a hot key verification makes zero SQL statements (root key and key both cached)", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { name: "hot", meta: { a: 1 }, permissions: ["documents.read"] });
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" }); // warm-up
    await settle();
    let data: unknown;
    const n = await h.countQueries(async () => {
      data = await verifyKey(h, key, { permissions: "documents.read" });
    });
    expect(data).toMatchObject({ valid: true, code: "VALID", name: "hot", meta: { a: 1 } });
    expect(n).toBe(0);
  });

  it("many hot verifications in a row still make zero statements", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    await verifyKey(h, key);
    await settle();
    const n = await h.countQueries(async () => {
      for (let i = 0; i < 5; i++) await verifyKey(h, key);
    });
    expect(n).toBe(0);
  });

  it("a flood of the same unknown key makes at most one statement", async () => {
    await verifyKey(h, "warm_the_root_key_cache"); // the root key itself is cached after one use
    const unknown = "flood_3xYzAbCdEfGhJkLmNpQrSt";
    const n = await h.countQueries(async () => {
      const results = await Promise.all(Array.from({ length: 50 }, () => verifyKey(h, unknown)));
      expect(results.every((r) => r.code === "NOT_FOUND")).toBe(true);
      for (let i = 0; i < 20; i++) expect(await verifyKey(h, unknown)).toEqual({ valid: false, code: "NOT_FOUND" });
    });
    expect(n).toBeLessThanOrEqual(1);
  });

  it("keys.deleteKey is seen by the next verification", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true });
    expect(await verifyKey(h, key)).toMatchObject({ valid: true }); // served from the cache
    expectOk(await h.post("/v2/keys.deleteKey", { keyId }, await admin(h)));
    expect(await verifyKey(h, key)).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("a permanent keys.deleteKey is seen by the next verification", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, await admin(h)));
    expect(await verifyKey(h, key)).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("apis.deleteApi is seen by the next verification of every key of the API", async () => {
    const apiId = await createApi(h);
    const a = await createKey(h, apiId);
    const b = await createKey(h, apiId);
    const other = await createKey(h, await createApi(h));
    for (const k of [a, b, other]) expect(await verifyKey(h, k.key)).toMatchObject({ valid: true });
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, await admin(h)));
    expect(await verifyKey(h, a.key)).toEqual({ valid: false, code: "NOT_FOUND" });
    expect(await verifyKey(h, b.key)).toEqual({ valid: false, code: "NOT_FOUND" });
    expect(await verifyKey(h, other.key)).toMatchObject({ valid: true, code: "VALID" });
  });

  it("a revoked root key is refused at once after deps.invalidate('rootkey', hash)", async () => {
    const rk = await h.rootKey(["apis.*.read_api", "apis.*.create_api"]);
    const apiId = await createApi(h, "rk-cache", rk);
    expectOk(await h.post("/v2/apis.getApi", { apiId }, rk)); // cached now
    const [rows] = await h.db.pool.query("SELECT id FROM root_keys WHERE hash = ?", [hashKey(rk)]);
    const id = (rows as Array<{ id: string }>)[0]?.id as string;
    await softDeleteRootKey(h.db.pool, id, Date.now());
    await h.deps.invalidate("rootkey", hashKey(rk));
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, rk), 401, "err:svc:authentication:key_not_found");
    // Other root keys are unaffected.
    expectOk(await h.post("/v2/apis.getApi", { apiId }, await admin(h)));
  });

  /** Resolves once the key loader's batch, scheduled by a lookup just made, has begun its database read. */
  const readBegun = () => new Promise((r) => setImmediate(r));

  it("a read of a cold key caches it although other keys' hashes were forgotten meanwhile (createKey does that)", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    const hash = hashKey(key);
    const read = keyRecordByHash(h.deps, hash);
    await readBegun();
    h.deps.keyCache.delete(hashKey("another_key_just_created"));
    // Evicted at once; the row that tells other instances is written after.
    const told = h.deps.invalidate("key", "key_another_changed");
    expect(await read).toMatchObject({ id: keyId });
    await told;
    expect(h.deps.keyCache.get(hash)).toMatchObject({ id: keyId });
  });

  it("a read of a key is not cached when that key, its API or the whole cache was invalidated meanwhile", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    const hash = hashKey(key);
    for (const invalidate of [
      // As updateKey invalidates it: the cache's tag for a key is the one keyTags gives and this evicts.
      () => h.deps.invalidate("key", keyId),
      () => h.deps.keyCache.deleteTag(`api:${apiId}`),
      () => h.deps.keyCache.delete(hash),
      () => h.deps.keyCache.clear(),
    ]) {
      const read = keyRecordByHash(h.deps, hash);
      await readBegun();
      const done = invalidate();
      expect(await read).toMatchObject({ id: keyId });
      await done;
      expect(h.deps.keyCache.get(hash), String(invalidate)).toBeUndefined();
    }
  });

  it("a cached key holds when it was last refilled only when it has a refill (a key without one holds no heap number for it)", async () => {
    const apiId = await createApi(h);
    const plain = await createKey(h, apiId);
    const refilled = await createKey(h, apiId, { credits: { remaining: 1, refill: { interval: "daily", amount: 3 } } });
    const before = Date.now();
    for (const k of [plain, refilled]) await keyRecordByHash(h.deps, hashKey(k.key));
    expect(h.deps.keyCache.get(hashKey(plain.key))).toMatchObject({ id: plain.keyId, refill: undefined, lastRefillAt: undefined });
    const cached = h.deps.keyCache.get(hashKey(refilled.key)) as { lastRefillAt: unknown; refill: unknown };
    expect(cached.refill).toEqual({ amount: 3, day: undefined });
    // Its creation, within the minute before the read (the database's clock is this machine's).
    expect(cached.lastRefillAt).toBeGreaterThan(before - 60_000);
    expect(cached.lastRefillAt).toBeLessThanOrEqual(Date.now());
  });

  it("a cold key is cached while keys are being created all the time", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const rk = await admin(h);
    let creating = true;
    const creators = Array.from({ length: 3 }, async () => {
      let n = 0;
      while (creating && n++ < 500) expectOk(await h.post("/v2/keys.createKey", { apiId }, rk));
    });
    let verifications = 0;
    try {
      while (h.deps.keyCache.get(hashKey(key)) === undefined && verifications < 50) {
        expect(await verifyKey(h, key)).toMatchObject({ valid: true });
        verifications++;
      }
    } finally {
      creating = false;
      await Promise.all(creators);
    }
    expect(verifications).toBe(1);
  });

  it("credits are never served from the cache: each verification spends exactly once", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { credits: { remaining: 3 } });
    expect(await verifyKey(h, key)).toMatchObject({ code: "VALID", credits: 2 });
    expect(await verifyKey(h, key)).toMatchObject({ code: "VALID", credits: 1 });
    expect(await verifyKey(h, key)).toMatchObject({ code: "VALID", credits: 0 });
    expect(await verifyKey(h, key)).toMatchObject({ code: "USAGE_EXCEEDED", credits: 0 });
  });
});
