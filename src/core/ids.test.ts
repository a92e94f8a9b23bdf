// Resource ids: `<prefix>_` + fixed-width base58 of (6 bytes of ms time + 10
// random bytes), so that they match ^[a-zA-Z0-9_]+$ and sort by creation time
// under a binary collation (so cursor pages, which go by id, stay stable).

import { randomBytes } from "node:crypto";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { base58Of16, type IdPrefix, newId, requestId } from "./ids.js";

const prefixes: IdPrefix[] = ["key", "api", "ks", "id", "perm", "role", "rl", "rlns", "rlor", "ws", "req", "dek", "mig"];
const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe("base58Of16", () => {
  it("is bs58's encoding padded to 22 digits, for edge and random inputs", () => {
    const edges = [
      Buffer.alloc(16),
      Buffer.alloc(16, 0xff),
      Buffer.from([0, ...Array(15).fill(0xff)]),
      Buffer.from([...Array(15).fill(0), 1]),
      Buffer.from([...Array(15).fill(0), 57]),
      Buffer.from([...Array(15).fill(0), 58]),
    ];
    const random = Array.from({ length: 2_000 }, () => randomBytes(16));
    for (const b of [...edges, ...random]) expect(base58Of16(b)).toBe(bs58.encode(b).padStart(22, "1"));
  });
});

describe("newId", () => {
  it.each(prefixes)("%s ids are `%s_` + 22 base58 characters", (prefix) => {
    const id = newId(prefix);
    expect(id).toMatch(new RegExp(`^${prefix}_[1-9A-HJ-NP-Za-km-z]{22}$`));
    expect(id).toMatch(/^[a-zA-Z0-9_]+$/);
    expect(id.length).toBeLessThanOrEqual(48);
  });

  it("is unique", () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 10_000 }, () => newId("key", now)));
    expect(ids.size).toBe(10_000);
  });

  it("encodes the creation time in its first 6 bytes, as bs58 reads them", () => {
    for (const t of [0, 1, 2 ** 32 - 1, 2 ** 32, 1_700_000_000_123, 2 ** 48 - 1]) {
      const bytes = Buffer.from(bs58.decode(newId("key", t).slice(4)));
      const full = Buffer.concat([Buffer.alloc(16), bytes]).subarray(-16);
      expect(full.readUIntBE(0, 6)).toBe(t);
    }
  });

  it("sorts by creation time in byte order", () => {
    const times = [0, 1, 999, 1_000, 1_600_000_000_000, 1_700_000_000_000, 1_700_000_000_001, 2_000_000_000_000, 4_102_444_800_000];
    const ids = times.map((t) => newId("key", t));
    expect([...ids].sort(byteOrder)).toEqual(ids);
  });

  it("ids made in the same millisecond sort after earlier ones and before later ones", () => {
    const earlier = newId("key", 1_700_000_000_000);
    const same = Array.from({ length: 50 }, () => newId("key", 1_700_000_000_001));
    const later = newId("key", 1_700_000_000_002);
    for (const id of same) {
      expect(byteOrder(earlier, id)).toBeLessThan(0);
      expect(byteOrder(id, later)).toBeLessThan(0);
    }
  });

  it("carries the creation time in its first 6 bytes", () => {
    const t = 1_712_345_678_901;
    const bytes = Buffer.from(bs58.decode(newId("api", t).slice(4)));
    // Padding '1's decode to leading zero bytes: the id's 16 bytes are the last 16.
    expect(bytes.subarray(0, Math.max(0, bytes.length - 16)).every((b) => b === 0)).toBe(true);
    const full = Buffer.alloc(16);
    bytes.subarray(Math.max(0, bytes.length - 16)).copy(full, 16 - Math.min(16, bytes.length));
    expect(full.readUIntBE(0, 6)).toBe(t);
  });

  it("uses the current time by default", () => {
    const before = newId("key", Date.now() - 1);
    const id = newId("key");
    const after = newId("key", Date.now() + 1);
    expect(byteOrder(before, id)).toBeLessThan(0);
    expect(byteOrder(id, after)).toBeLessThan(0);
  });
});

describe("requestId", () => {
  it("is `req_` + 22 base58 characters, unique across many heads", () => {
    // 20,000 ids span 6 heads of 3,364.
    const ids = Array.from({ length: 20_000 }, requestId);
    for (const id of ids) expect(id).toMatch(/^req_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(0, -2))).size).toBeGreaterThanOrEqual(6);
  });
});
