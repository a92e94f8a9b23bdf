// A flood of random keys against verifyKey: misses are read from the database in
// shared batches (not one read per request), remembered as misses, and kept apart
// from the records of real keys so that they cannot push hot keys out.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { api, key, verify } from "../fixtures.js";
import { useHarness } from "../harness.js";

const randomKey = (): string => `flood_${randomBytes(16).toString("hex")}`;

describe("a flood of random keys", () => {
  const h = useHarness();

  it("reaches the database in batches, then not at all for the same keys", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const real = await key(h, rk, apiId);
    const flood = Array.from({ length: 2_000 }, randomKey);
    const verifyAll = async (keys: string[]) => {
      const answers = await Promise.all(keys.map((k) => h.post("/v2/keys.verifyKey", { key: k }, rk)));
      return answers.map((r) => (r.status === 200 ? r.body.data.code : `HTTP ${r.status}`));
    };

    let first = 0;
    let again = 0;
    const codes: string[] = [];
    // 2,000 distinct keys, 250 at a time, each wave sent twice in a row (well
    // within the 2 s for which an unknown hash is remembered).
    for (let i = 0; i < flood.length; i += 250) {
      const wave = flood.slice(i, i + 250);
      first += await h.countQueries(async () => {
        codes.push(...(await verifyAll(wave)));
      });
      again += await h.countQueries(async () => {
        codes.push(...(await verifyAll(wave)));
      });
    }
    expect(new Set(codes)).toEqual(new Set(["NOT_FOUND"]));
    // A few batched reads per wave, not one read per key...
    expect(first).toBeLessThan(flood.length / 20);
    // ...and none at all for keys just found unknown.
    expect(again).toBe(0);
    expect((await verify(h, rk, real.key)).code).toBe("VALID");
  });

  it("does not evict hot keys from a small cache", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const other = await h.otherInstance({ CACHE_MAX_ENTRIES: "50" });
    const hot = await Promise.all(Array.from({ length: 10 }, () => key(h, rk, apiId)));
    for (const k of hot) expect((await other.post("/v2/keys.verifyKey", { key: k.key }, rk)).body.data.code).toBe("VALID");
    for (const k of hot) expect(other.deps.keyCache.get(hashKey(k.key))).toMatchObject({ id: k.keyId });

    for (let wave = 0; wave < 10; wave++) {
      const answers = await Promise.all(Array.from({ length: 200 }, () => other.post("/v2/keys.verifyKey", { key: randomKey() }, rk)));
      expect(answers.every((r) => r.body.data.code === "NOT_FOUND")).toBe(true);
    }
    expect(other.deps.keyCache.missCount).toBeGreaterThan(1_000);
    // Every hot key is still cached after 2,000 misses through a 50-entry cache.
    for (const k of hot) expect(other.deps.keyCache.get(hashKey(k.key))).toMatchObject({ id: k.keyId });
    expect(other.deps.keyCache.size).toBe(hot.length);
  });

  it("a key created after its hash was remembered as unknown verifies at once", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    // Forget it, remember its hash as unknown, then make it known again the way createKey does.
    h.deps.keyCache.clear();
    h.deps.keyCache.setMiss(hashKey(k.key));
    expect((await verify(h, rk, k.key)).code).toBe("NOT_FOUND");
    h.deps.keyCache.delete(hashKey(k.key));
    expect((await verify(h, rk, k.key)).code).toBe("VALID");
  });
});
