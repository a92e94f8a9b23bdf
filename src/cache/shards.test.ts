// The caches' shards: how many, how evenly keys spread over them, and that a
// sharded LRU and a sharded RecordCache keep their bounds and invalidations.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newId } from "../core/ids.js";
import { ENTRIES_A_SHARD, ShardedLru, ShardedMap, shardCount, shardOf } from "./shards.js";
import { MISS, RecordCache } from "./verification-cache.js";

// As a key's hash is kept (domain/keys/generate.ts, hashKey).
const digest = (i: number) => createHash("sha256").update(`k${i}`).digest("base64");

describe("shardCount", () => {
  it("leaves a small cache whole, so its eviction order stays exactly LRU", () => {
    expect(shardCount(1)).toBe(1);
    expect(shardCount(ENTRIES_A_SHARD)).toBe(1);
    expect(shardCount(10_000)).toBe(2);
  });

  it("cuts a large one into powers of two of at most ENTRIES_A_SHARD each, up to 128", () => {
    expect(shardCount(100_000)).toBe(16);
    expect(100_000 / 16).toBeLessThanOrEqual(ENTRIES_A_SHARD);
    expect(shardCount(1_000_000)).toBe(128);
    expect(shardCount(100_000_000)).toBe(128);
  });

  it("never leaves a shard less than 1 MB of CACHE_MAX_BYTES", () => {
    expect(shardCount(1_000_000, 1024)).toBe(1);
    expect(shardCount(1_000_000, 4 << 20)).toBe(4);
    expect(shardCount(1_000_000, 256 << 20)).toBe(128);
  });
});

describe("shardOf", () => {
  const spread = (keys: string[], shards: number) => {
    const counts = new Array<number>(shards).fill(0);
    for (const k of keys) counts[shardOf(k, shards - 1)] = (counts[shardOf(k, shards - 1)] as number) + 1;
    const mean = keys.length / shards;
    return { min: Math.min(...counts) / mean, max: Math.max(...counts) / mean };
  };

  const evenly = (keys: string[]) => {
    for (const shards of [16, 128]) {
      const { min, max } = spread(keys, shards);
      expect(min).toBeGreaterThan(shards === 16 ? 0.9 : 0.75);
      expect(max).toBeLessThan(shards === 16 ? 1.1 : 1.25);
    }
  };
  const id = (prefix: string) => `${prefix}_${randomBytes(16).toString("base64url").slice(0, 22)}`;

  it("spreads SHA-256 digests evenly, base64 (a key's hash) and hex", () => {
    evenly(Array.from({ length: 64_000 }, (_, i) => digest(i)));
    evenly(Array.from({ length: 64_000 }, (_, i) => createHash("sha256").update(`k${i}`).digest("hex")));
  });

  it("spreads keys that share a prefix and end in an id or a digest evenly (tags, remembered misses of an import)", () => {
    // A key's own tag is its id as newId makes it (domain/keys/lookup.ts, keyTags): all made in the same few milliseconds here.
    evenly(Array.from({ length: 64_000 }, () => newId("key")));
    evenly(Array.from({ length: 64_000 }, () => `identity:${id("id")}`));
    evenly(Array.from({ length: 64_000 }, (_, i) => `import|mig_1ChQh4gGu7aKpeqzefPrQR|${digest(i)}`));
    evenly(Array.from({ length: 64_000 }, () => `migration|ws_1ChQh4gGu7aKpeqzefPrQR|${id("mig")}`));
  });

  it("is 0 for one shard", () => {
    expect(shardOf("anything", 0)).toBe(0);
  });
});

describe("ShardedLru", () => {
  it("holds at most its max (and a shard's rounding), the most recent kept", () => {
    const lru = new ShardedLru<number>({ max: 100_000 }, shardCount(100_000));
    expect(lru.shardCount).toBe(16);
    for (let i = 0; i < 200_000; i++) lru.set(digest(i), i);
    expect(lru.size).toBeGreaterThan(99_000);
    expect(lru.size).toBeLessThanOrEqual(100_000);
    // The last 50,000 set are about 3,125 a shard, half of what each holds.
    for (let i = 150_000; i < 200_000; i++) expect(lru.get(digest(i))).toBe(i);
    expect(lru.get(digest(0))).toBeUndefined();
    lru.delete(digest(199_999));
    expect(lru.get(digest(199_999))).toBeUndefined();
    lru.clear();
    expect(lru.size).toBe(0);
  });

  it("keeps each shard's share of maxSize", () => {
    const lru = new ShardedLru<string>({ max: 100_000, maxSize: 16 << 20, sizeCalculation: (v) => v.length }, shardCount(100_000, 16 << 20));
    expect(lru.shardCount).toBe(16);
    const big = "x".repeat(100_000);
    for (let i = 0; i < 400; i++) lru.set(digest(i), big);
    // 16 MB of 100 KB values is at most 167, whatever the shards' rounding.
    expect(lru.size).toBeLessThanOrEqual(16 * Math.floor((1 << 20) / 100_000));
    expect(lru.size).toBeGreaterThan(100);
  });

  it("tells dispose why each value left, and counts a replaced value's new size", () => {
    const gone: string[] = [];
    const lru = new ShardedLru<string>({ max: 3, maxSize: 10, sizeCalculation: (v) => v.length, dispose: (v, k, why) => gone.push(`${k}=${v} ${why}`) }, 1);
    lru.set("a", "1");
    lru.set("b", "2");
    lru.set("c", "3");
    lru.get("a");
    lru.set("d", "4");
    lru.set("a", "10");
    lru.delete("c");
    lru.delete("c");
    expect(gone).toEqual(["b=2 evict", "a=1 set", "c=3 delete"]);
    expect([lru.get("a"), lru.get("d"), lru.size]).toEqual(["10", "4", 2]);
    // a (2) and d (1) held; a grown to 10 leaves no room for d.
    lru.set("a", "1234567890");
    expect(gone.slice(3)).toEqual(["a=10 set", "d=4 evict"]);
    expect([lru.get("a"), lru.get("d"), lru.size]).toEqual(["1234567890", undefined, 1]);
    // Larger than maxSize: not held, and the value it would replace is dropped.
    lru.set("a", "12345678901");
    expect(gone.at(-1)).toBe("a=1234567890 delete");
    expect([lru.get("a"), lru.size]).toEqual([undefined, 0]);
    lru.set("e", "5");
    lru.clear();
    expect(gone.at(-1)).toBe("e=5 delete");
    expect(lru.size).toBe(0);
  });

  it("serves a value for its ttl, then forgets it", async () => {
    const gone: string[] = [];
    const lru = new ShardedLru<number>({ max: 10, ttl: 30, dispose: (v, k, why) => gone.push(`${k}=${v} ${why}`) }, 2);
    lru.set("a", 1);
    expect(lru.get("a")).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    lru.set("b", 2);
    expect(lru.get("a")).toBeUndefined();
    expect(lru.get("b")).toBe(2);
    expect(gone).toEqual(["a=1 expire"]);
  });

  it("finds each key's own value while its slots are taken again and again, in any shard", () => {
    const lru = new ShardedLru<{ i: number }>({ max: 20_000 }, 8);
    for (let i = 0; i < 100_000; i++) {
      lru.set(digest(i), { i });
      // Some replaced, some deleted, as records are.
      if (i % 7 === 0) lru.set(digest(i), { i });
      if (i % 11 === 0) lru.delete(digest(i - 5));
    }
    let held = 0;
    for (let i = 0; i < 100_000; i++) {
      const v = lru.get(digest(i));
      if (v === undefined) continue;
      expect(v.i).toBe(i);
      held++;
    }
    expect(held).toBe(lru.size);
    expect(held).toBeGreaterThan(19_000);
  });

  it("keeps a slot's two extras with its value, and hands them to dispose with it", () => {
    const gone: string[] = [];
    const lru = new ShardedLru<string, string, number>(
      { max: 2, extras: true, dispose: (v, k, why, first, second) => gone.push(`${k}=${v},${first},${second} ${why}`) },
      1,
    );
    const extras = (k: string) => {
      const slot = lru.slotOf(k);
      return slot < 0 ? undefined : [lru.valueAt(slot), lru.firstAt(slot), lru.secondAt(slot)];
    };
    lru.set("a", "1", "a-own", 10);
    lru.set("b", "2", "b-own", 20);
    expect([extras("a"), extras("b"), extras("c")]).toEqual([["1", "a-own", 10], ["2", "b-own", 20], undefined]);
    // slotOf is a use: a read last, b goes first.
    lru.slotOf("a");
    lru.set("c", "3", "c-own", 30);
    lru.set("a", "4", "a-new", 40);
    lru.delete("c");
    expect(gone).toEqual(["b=2,b-own,20 evict", "a=1,a-own,10 set", "c=3,c-own,30 delete"]);
    // The emptied slots are taken again (d takes c's): what they held before does not come back.
    lru.set("d", "5");
    lru.set("e", "6", "e-own");
    expect([extras("d"), extras("e"), extras("a")]).toEqual([["5", undefined, undefined], ["6", "e-own", undefined], undefined]);
    expect(gone.at(-1)).toBe("a=4,a-new,40 evict");
    lru.clear();
    expect(gone.slice(-2).sort()).toEqual(["d=5,undefined,undefined delete", "e=6,e-own,undefined delete"]);
  });

  it("finds each key's own value and extras while slots are taken again and again, in any shard", () => {
    const lru = new ShardedLru<{ i: number }, string, number>({ max: 20_000, extras: true }, 8);
    for (let i = 0; i < 100_000; i++) {
      lru.set(digest(i), { i }, `own ${i}`, -i);
      if (i % 7 === 0) lru.set(digest(i), { i }, `own ${i}`, -i);
      if (i % 11 === 0) lru.delete(digest(i - 5));
    }
    let held = 0;
    for (let i = 0; i < 100_000; i++) {
      const slot = lru.slotOf(digest(i));
      if (slot < 0) continue;
      expect([lru.valueAt(slot).i, lru.firstAt(slot), lru.secondAt(slot)]).toEqual([i, `own ${i}`, -i]);
      held++;
    }
    expect(held).toBe(lru.size);
    expect(held).toBeGreaterThan(19_000);
  });

  it("refuses a shard count that is not a power of two", () => {
    expect(() => new ShardedLru<number>({ max: 10 }, 3)).toThrow(/power of two/);
    expect(() => new ShardedMap<number>(0)).toThrow(/power of two/);
  });
});

describe("ShardedMap", () => {
  it("is a Map", () => {
    const m = new ShardedMap<number>(8);
    for (let i = 0; i < 1000; i++) m.set(`t${i}`, i);
    expect(m.size).toBe(1000);
    expect(m.get("t7")).toBe(7);
    m.delete("t7");
    expect(m.get("t7")).toBeUndefined();
    expect(m.size).toBe(999);
    m.clear();
    expect(m.size).toBe(0);
  });
});

describe("RecordCache, sharded (CACHE_MAX_ENTRIES large)", () => {
  const big = () =>
    new RecordCache<{ v: number }>(
      { maxEntries: 100_000, maxBytes: 256 << 20, ttlMs: 60_000, negativeTtlMs: 2_000, groups: ["api:"], digestKeys: true },
      () => 10,
    );

  it("is cut into shards only when its keys are digests", () => {
    expect(big().shardCount).toBe(16);
    expect(new RecordCache<{ v: number }>({ maxEntries: 100_000, maxBytes: 256 << 20, ttlMs: 0, negativeTtlMs: 0 }, () => 10).shardCount).toBe(1);
  });

  it("finds, forgets and invalidates records across its shards", () => {
    const c = big();
    for (let i = 0; i < 1_000; i++) c.set(digest(i), { v: i }, [`key:${i}`, i % 2 === 0 ? "api:even" : "api:odd", `identity:${i % 10}`]);
    expect(c.size).toBe(1_000);
    expect(c.get(digest(5))).toEqual({ v: 5 });
    c.delete(digest(5));
    expect(c.get(digest(5))).toBeUndefined();
    c.deleteTag("key:6");
    expect(c.get(digest(6))).toBeUndefined();
    // A tag shared by records in every shard.
    c.deleteTag("identity:3");
    for (let i = 3; i < 1_000; i += 10) expect(c.get(digest(i))).toBeUndefined();
    expect(c.get(digest(4))).toEqual({ v: 4 });
    c.deleteTag("api:odd");
    expect(c.get(digest(7))).toBeUndefined();
    expect(c.get(digest(8))).toEqual({ v: 8 });
    c.setMiss(digest(5));
    expect(c.get(digest(5))).toBe(MISS);
    c.clear();
    expect(c.size).toBe(0);
    expect(c.get(digest(8))).toBeUndefined();
  });

  it("stays within its bound under churn, an evicted record's tags forgotten", () => {
    const c = big();
    for (let i = 0; i < 250_000; i++) c.set(digest(i), { v: i }, [`key:${i}`, "api:a"]);
    expect(c.size).toBeLessThanOrEqual(100_000);
    expect(c.stats.evictions).toBe(250_000 - c.size);
    // The tag of an evicted record names nothing: deleting it drops no live record.
    const before = c.size;
    c.deleteTag("key:0");
    expect(c.size).toBe(before);
    c.deleteTag("key:249999");
    expect(c.size).toBe(before - 1);
  });
});
