// Root keys: `svc_` + a fixed-width base58 body carrying a checksum, so that a
// truncated or altered root key is `malformed` without a database lookup
// (docs/auth.md, "Root keys"). This is a security decision: the tests below protect it.
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { generateRootKey, isWellFormedRootKey, ROOT_KEY_PREFIX } from "./root-key.js";

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const SHAPE = /^svc_[1-9A-HJ-NP-Za-km-z]{39}$/;
const replaceAt = (s: string, i: number, c: string) => `${s.slice(0, i)}${c}${s.slice(i + 1)}`;

describe("generateRootKey", () => {
  it("starts with the fixed prefix svc and an underscore, then 39 base58 characters", () => {
    expect(ROOT_KEY_PREFIX).toBe("svc");
    for (let i = 0; i < 200; i++) expect(generateRootKey()).toMatch(SHAPE);
  });

  it("is random: no two keys are equal", () => {
    const keys = new Set(Array.from({ length: 2000 }, () => generateRootKey()));
    expect(keys.size).toBe(2000);
  });

  it("encodes 28 bytes (24 random + 4 checksum) under fixed-width padding", () => {
    for (let i = 0; i < 200; i++) {
      const bytes = bs58.decode(generateRootKey().slice(4));
      expect(bytes.length).toBeGreaterThanOrEqual(28);
      // Padding '1's decode to leading zero bytes only.
      expect(bytes.subarray(0, bytes.length - 28).every((b) => b === 0)).toBe(true);
    }
  });
});

describe("isWellFormedRootKey", () => {
  it("accepts every generated key", () => {
    for (let i = 0; i < 2000; i++) expect(isWellFormedRootKey(generateRootKey())).toBe(true);
  });

  it("accepts keys whose random part starts with zero bytes (padding)", () => {
    // Try until a key with a leading '1' beyond the padding shows up; the check must still hold.
    const keys = Array.from({ length: 5000 }, () => generateRootKey()).filter((k) => k.charAt(4) === "1");
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(isWellFormedRootKey(k)).toBe(true);
  });

  it("rejects every single-character change (the checksum catches it)", () => {
    const key = generateRootKey();
    let tried = 0;
    for (let i = 4; i < key.length; i++) {
      for (const c of [BASE58[(BASE58.indexOf(key.charAt(i)) + 1) % 58] as string, BASE58[(BASE58.indexOf(key.charAt(i)) + 29) % 58] as string]) {
        expect(isWellFormedRootKey(replaceAt(key, i, c)), `position ${i} -> ${c}`).toBe(false);
        tried++;
      }
    }
    expect(tried).toBe(78);
  });

  it("rejects two swapped neighbouring characters", () => {
    const key = generateRootKey();
    for (let i = 4; i < key.length - 1; i++) {
      if (key.charAt(i) === key.charAt(i + 1)) continue;
      const swapped = `${key.slice(0, i)}${key.charAt(i + 1)}${key.charAt(i)}${key.slice(i + 2)}`;
      expect(isWellFormedRootKey(swapped)).toBe(false);
    }
  });

  it.each<[string, (k: string) => string]>([
    ["truncated by 1", (k) => k.slice(0, -1)],
    ["truncated by 4", (k) => k.slice(0, -4)],
    ["the prefix only", () => "svc_"],
    ["the prefix without underscore", () => "svc"],
    ["one extra character", (k) => `${k}1`],
    ["one extra character in front of the body", (k) => `svc_1${k.slice(4)}`],
    ["another prefix", (k) => `sk_${k.slice(4)}`],
    ["an upper-case prefix", (k) => `SVC_${k.slice(4)}`],
    ["no underscore", (k) => `svc${k.slice(4)}`],
    ["a leading space", (k) => ` ${k}`],
    ["a trailing space", (k) => `${k} `],
    ["a trailing newline", (k) => `${k}\n`],
    ["a trailing no-break space", (k) => `${k}\u00a0`],
    ["quotes", (k) => `"${k}"`],
    ["a character outside base58 (0)", (k) => replaceAt(k, 10, "0")],
    ["a character outside base58 (O)", (k) => replaceAt(k, 10, "O")],
    ["a character outside base58 (l)", (k) => replaceAt(k, 10, "l")],
    ["the empty string", () => ""],
    ["all ones", () => `svc_${"1".repeat(39)}`],
    ["all z (overflows 28 bytes)", () => `svc_${"z".repeat(39)}`],
  ])("rejects %s", (_label, build) => {
    expect(isWellFormedRootKey(build(generateRootKey()))).toBe(false);
  });
});
