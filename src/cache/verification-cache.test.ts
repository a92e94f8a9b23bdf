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
describe("RecordCache tags", () => {
  const small = () => new RecordCache<{ v: number }>({ maxEntries: 3, maxBytes: 1_000_000, ttlMs: 60_000, negativeTtlMs: 2_000 }, () => 10);

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
});
