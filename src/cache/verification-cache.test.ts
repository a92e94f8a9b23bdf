// Which reads may cache what they found: a read caches unless its own hash, one
// of its record's tags or the whole cache was invalidated while it ran. Other
// invalidations (createKey forgets each new key's hash) do not stop it.
import { describe, expect, it } from "vitest";
import { MISS, RecordCache } from "./verification-cache.js";

const cache = () => new RecordCache<{ v: number }>({ maxEntries: 100, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000 }, () => 10);

describe("RecordCache.unchangedSince", () => {
  it("holds when nothing was invalidated since the read began", () => {
    const c = cache();
    c.delete("before");
    const v = c.version;
    expect(c.unchangedSince(v, "h1", ["key:1"])).toBe(true);
  });

  it("holds when only other hashes and other tags were invalidated", () => {
    const c = cache();
    const v = c.version;
    for (let i = 0; i < 100; i++) c.delete(`new-key-${i}`);
    c.deleteTag("key:2");
    c.deleteTag("api:other");
    expect(c.version).not.toBe(v);
    expect(c.unchangedSince(v, "h1", ["key:1", "api:a", "ws:w"])).toBe(true);
  });

  it("fails when the read's own hash was invalidated", () => {
    const c = cache();
    const v = c.version;
    c.delete("h1");
    c.delete("h2");
    expect(c.unchangedSince(v, "h1")).toBe(false);
    expect(c.unchangedSince(v, "h1", ["key:1"])).toBe(false);
    expect(c.unchangedSince(c.version, "h1")).toBe(true);
  });

  it("fails when one of the record's tags was invalidated", () => {
    const c = cache();
    const v = c.version;
    c.deleteTag("api:a");
    expect(c.unchangedSince(v, "h1", ["key:1", "api:a"])).toBe(false);
    // A miss has no tags: an API change does not make an unknown hash known.
    expect(c.unchangedSince(v, "h1")).toBe(true);
  });

  it("fails for every read begun before a clear", () => {
    const c = cache();
    const v = c.version;
    c.clear();
    expect(c.unchangedSince(v, "h1")).toBe(false);
    expect(c.unchangedSince(c.version, "h1")).toBe(true);
  });

  it("fails for a read that outlived more invalidations than are remembered", () => {
    const c = cache();
    const v = c.version;
    c.delete("h1");
    for (let i = 0; i < 5_000; i++) c.delete(`new-key-${i}`);
    // h1's invalidation is no longer remembered; the read is refused rather than trusted.
    expect(c.unchangedSince(v, "h1")).toBe(false);
    expect(c.unchangedSince(v, "unrelated")).toBe(false);
    // A read begun after all of that caches.
    expect(c.unchangedSince(c.version, "h1")).toBe(true);
  });

  it("an invalidation of the same hash twice is remembered at its latest", () => {
    const c = cache();
    c.delete("h1");
    const v = c.version;
    c.delete("h2");
    expect(c.unchangedSince(v, "h1")).toBe(true);
    c.delete("h1");
    expect(c.unchangedSince(v, "h1")).toBe(false);
  });

  it("setRead and setMissRead cache only what unchangedSince allows", () => {
    const c = cache();
    const v = c.version;
    c.delete("other");
    c.setRead(v, "h1", { v: 1 }, ["key:1"]);
    c.setMissRead(v, "h2");
    expect(c.get("h1")).toEqual({ v: 1 });
    expect(c.get("h2")).toBe(MISS);
    const w = c.version;
    c.deleteTag("key:3");
    c.delete("h4");
    c.setRead(w, "h3", { v: 3 }, ["key:3"]);
    c.setMissRead(w, "h4");
    expect(c.get("h3")).toBeUndefined();
    expect(c.get("h4")).toBeUndefined();
  });

  it("delete and deleteTag still drop what they name", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1"]);
    c.set("h2", { v: 2 }, ["key:2"]);
    c.setMiss("h3");
    c.deleteTag("key:1");
    c.delete("h3");
    expect(c.get("h1")).toBeUndefined();
    expect(c.get("h2")).toEqual({ v: 2 });
    expect(c.get("h3")).toBeUndefined();
    c.setMiss("h3");
    expect(c.get("h3")).toBe(MISS);
  });
});

// A tag names one hash (a key's own `key:` tag) or many (an API's, a workspace's):
// the first is held without a Set of its own, and both must drop exactly what they name.
// The same behaviour with `api:` and `ws:` as group tags (CacheOptions.groups), as the key cache has them.
describe.each([
  ["every tag a Set of its hashes", undefined],
  ["api: and ws: as group tags", ["api:", "ws:"]],
])("RecordCache tags, %s", (_, groups) => {
  const cache = () =>
    new RecordCache<{ v: number }>({ maxEntries: 100, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000, ...(groups ? { groups } : {}) }, () => 10);
  const small = () =>
    new RecordCache<{ v: number }>({ maxEntries: 3, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000, ...(groups ? { groups } : {}) }, () => 10);

  it("deleteTag drops the one record of a tag, and every record of a shared tag, and nothing else", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1", "api:a"]);
    c.set("h2", { v: 2 }, ["key:2", "api:a"]);
    c.set("h3", { v: 3 }, ["key:3", "api:b"]);
    c.deleteTag("key:2");
    expect([c.get("h1"), c.get("h2"), c.get("h3")]).toEqual([{ v: 1 }, undefined, { v: 3 }]);
    c.set("h2", { v: 2 }, ["key:2", "api:a"]);
    c.deleteTag("api:a");
    expect([c.get("h1"), c.get("h2"), c.get("h3")]).toEqual([undefined, undefined, { v: 3 }]);
    c.deleteTag("api:b");
    expect(c.get("h3")).toBeUndefined();
  });

  it("a record set again under the same tags is still dropped by them", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1", "api:a"]);
    c.set("h1", { v: 2 }, ["key:1", "api:a"]);
    expect(c.get("h1")).toEqual({ v: 2 });
    c.deleteTag("key:1");
    expect(c.get("h1")).toBeUndefined();
    c.set("h1", { v: 3 }, ["key:1", "api:a"]);
    c.set("h1", { v: 4 }, ["key:1", "api:a"]);
    c.deleteTag("api:a");
    expect(c.get("h1")).toBeUndefined();
  });

  it("an evicted record leaves its tags: a later deleteTag drops only what is still held", () => {
    const c = small();
    c.set("h1", { v: 1 }, ["key:1", "api:a"]);
    c.set("h2", { v: 2 }, ["key:2", "api:a"]);
    c.set("h3", { v: 3 }, ["key:3", "api:a"]);
    // A fourth record evicts the least recently used, h1, and takes it out of key:1 and api:a.
    c.set("h4", { v: 4 }, ["key:4", "api:b"]);
    expect(c.get("h1")).toBeUndefined();
    expect(c.stats.evictions).toBe(1);
    c.set("h5", { v: 5 }, ["key:1", "api:b"]); // key:1 now names h5 alone; h2 is evicted
    c.deleteTag("api:a"); // only h3 is left of api:a
    expect([c.get("h3"), c.get("h4"), c.get("h5")]).toEqual([undefined, { v: 4 }, { v: 5 }]);
    c.deleteTag("key:1");
    expect(c.get("h5")).toBeUndefined();
    expect(c.get("h4")).toEqual({ v: 4 });
  });

  it("a record dropped by a shared tag is not served stale, nor counted a hit", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1", "api:a", "ws:w"]);
    c.set("h2", { v: 2 }, ["key:2", "api:b", "ws:w"]);
    c.deleteTag("api:a");
    expect(c.stale("h1")).toBeUndefined();
    expect(c.stale("h2")).toEqual({ v: 2 });
    const { hits, misses } = c.stats;
    expect(c.get("h1")).toBeUndefined();
    expect(c.stats).toMatchObject({ hits, misses: misses + 1 });
    c.deleteTag("ws:w");
    expect(c.get("h2")).toBeUndefined();
    expect(c.stale("h2")).toBeUndefined();
  });

  it("a record set after its shared tag was deleted is held, until the tag is deleted again", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1", "api:a"]);
    c.deleteTag("api:a");
    c.set("h2", { v: 2 }, ["key:2", "api:a"]);
    c.set("h1", { v: 3 }, ["key:1", "api:a"]);
    expect([c.get("h1"), c.get("h2")]).toEqual([{ v: 3 }, { v: 2 }]);
    c.deleteTag("api:a");
    expect([c.get("h1"), c.get("h2")]).toEqual([undefined, undefined]);
  });

  it("a read begun before a shared tag's deletion does not cache, one begun after does", () => {
    const c = cache();
    const v = c.version;
    c.deleteTag("ws:w");
    c.setRead(v, "h1", { v: 1 }, ["key:1", "api:a", "ws:w"]);
    expect(c.get("h1")).toBeUndefined();
    c.setRead(c.version, "h1", { v: 1 }, ["key:1", "api:a", "ws:w"]);
    expect(c.get("h1")).toEqual({ v: 1 });
  });

  it("clear drops the records of shared tags, and records set after it are held", () => {
    const c = cache();
    c.set("h1", { v: 1 }, ["key:1", "api:a", "ws:w"]);
    c.clear();
    expect(c.get("h1")).toBeUndefined();
    c.set("h2", { v: 2 }, ["key:2", "api:a", "ws:w"]);
    expect(c.get("h2")).toEqual({ v: 2 });
    c.deleteTag("api:a");
    expect(c.get("h2")).toBeUndefined();
  });
});

describe("RecordCache group tags", () => {
  const groupCells = (c: RecordCache<{ v: number }>): Map<string, unknown> => (c as unknown as { groupCells: Map<string, unknown> }).groupCells;

  it("forgets a group's cell with the last record that holds it, whether evicted, deleted or replaced", () => {
    const c = new RecordCache<{ v: number }>({ maxEntries: 2, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000, groups: ["api:"] }, () => 10);
    c.set("h1", { v: 1 }, ["key:1", "api:a"]);
    c.set("h2", { v: 2 }, ["key:2", "api:a"]);
    c.set("h2", { v: 3 }, ["key:2", "api:b"]);
    expect([...groupCells(c).keys()].sort()).toEqual(["api:a", "api:b"]);
    c.delete("h1");
    expect([...groupCells(c).keys()]).toEqual(["api:b"]);
    c.set("h3", { v: 4 }, ["key:3", "api:c"]);
    c.set("h4", { v: 5 }, ["key:4", "api:c"]); // evicts h2, the last of api:b
    expect([...groupCells(c).keys()]).toEqual(["api:c"]);
    c.deleteTag("api:c");
    expect(groupCells(c).size).toBe(0);
    // The records of the deleted group are dropped as they are read; nothing is left behind.
    expect([c.get("h3"), c.get("h4")]).toEqual([undefined, undefined]);
    expect(c.size).toBe(0);
    expect(groupCells(c).size).toBe(0);
  });

  it("keeps a tag without its prefix precise", () => {
    const c = new RecordCache<{ v: number }>({ maxEntries: 10, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000, groups: ["api:"] }, () => 10);
    c.set("h1", { v: 1 }, ["key:1", "api:a", "identity:i"]);
    expect([...groupCells(c).keys()]).toEqual(["api:a"]);
    c.deleteTag("identity:i");
    expect(c.get("h1")).toBeUndefined();
  });
});
