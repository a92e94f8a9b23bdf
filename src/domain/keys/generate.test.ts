// Key strings: `prefix_` + base58 (Bitcoin alphabet) of
// byteLength CSPRNG bytes; stored as base64(SHA-256(whole key)); start = prefix_ + 4.
import { createHash } from "node:crypto";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { generateKey, hashKey } from "./generate.js";

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

describe("generateKey", () => {
  it("joins the prefix and the random part with one underscore", () => {
    const { key, start } = generateKey("acme", 16);
    expect(key.startsWith("acme_")).toBe(true);
    expect(key.slice(5)).toMatch(BASE58);
    expect(start).toBe(`acme_${key.slice(5, 9)}`);
  });

  it("a prefix ending in _ gives __ (the server adds exactly one separator)", () => {
    const { key } = generateKey("sk_", 16);
    expect(key.startsWith("sk__")).toBe(true);
  });

  it.each([undefined, ""])("without a prefix (%j) the key is the base58 part and start its first 4 characters", (prefix) => {
    const { key, start } = generateKey(prefix, 16);
    expect(key).toMatch(BASE58);
    expect(start).toBe(key.slice(0, 4));
  });

  it.each([16, 17, 32, 64, 128, 255])("the random part of byteLength %i decodes to exactly that many bytes", (n) => {
    for (let i = 0; i < 20; i++) {
      const { key } = generateKey("p", n);
      expect(bs58.decode(key.slice(2))).toHaveLength(n);
    }
  });

  it("keys drawn across many blocks of random bytes are all different, and none is all zeros", () => {
    // 4 KB blocks: 3,000 keys of 16 to 255 bytes go through dozens of refills.
    const seen = new Set<string>();
    for (let i = 0; i < 3_000; i++) {
      const n = 16 + (i % 240);
      const { key } = generateKey(undefined, n);
      const bytes = bs58.decode(key);
      expect(bytes).toHaveLength(n);
      expect(bytes.every((b) => b === 0)).toBe(false);
      seen.add(key);
    }
    expect(seen.size).toBe(3_000);
  });

  it("every byte of a key is random: no byte position is stuck at zero (as overlapping or zeroed slices would leave it)", () => {
    // 16-byte keys, 4,096 of them: each position is 0 in ~16 keys by chance (1 in 256).
    const zeros = new Array<number>(16).fill(0);
    for (let i = 0; i < 4_096; i++) {
      const bytes = bs58.decode(generateKey(undefined, 16).key);
      bytes.forEach((b, j) => {
        if (b === 0) zeros[j] = (zeros[j] as number) + 1;
      });
    }
    for (const z of zeros) expect(z).toBeLessThan(100);
  });

  it("16 bytes make 21-22 characters, 32 bytes 43-44", () => {
    for (let i = 0; i < 200; i++) {
      expect(generateKey(undefined, 16).key.length).toBeGreaterThanOrEqual(16);
      expect(generateKey(undefined, 16).key.length).toBeLessThanOrEqual(22);
      expect(generateKey(undefined, 32).key.length).toBeLessThanOrEqual(44);
    }
  });

  it("is random", () => {
    const keys = new Set(Array.from({ length: 5000 }, () => generateKey(undefined, 16).key));
    expect(keys.size).toBe(5000);
  });
});

describe("hashKey", () => {
  it("is standard base64 (with padding) of SHA-256 of the whole key: always 44 characters", () => {
    expect(hashKey("abc")).toBe("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    const { key } = generateKey("acme", 16);
    expect(hashKey(key)).toBe(createHash("sha256").update(key).digest("base64"));
    expect(hashKey(key)).toHaveLength(44);
  });

  it("hashes the prefix too and reads the key as UTF-8", () => {
    expect(hashKey("a_xyz")).not.toBe(hashKey("b_xyz"));
    expect(hashKey("é")).toBe(createHash("sha256").update(Buffer.from("é", "utf8")).digest("base64"));
  });
});
