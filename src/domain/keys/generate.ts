import { hash, randomBytes } from "node:crypto";
import bs58 from "bs58";

// A key's random bytes are taken from a block drawn at once from the CSPRNG:
// randomBytes of 16 bytes cost ~2-3 µs a call here (a call into OpenSSL each
// time), a slice of a 4 KB block and its zeroing ~0.2 µs. Each slice is zeroed
// once encoded, so the block never holds the bytes of a key already handed out;
// it does hold those of up to 255 keys not made yet, which a heap snapshot or a
// core dump would show, as it would show any key string still in memory.
const BLOCK = 4096;
let block = Buffer.alloc(0);
let at = 0;

function randomSlice(n: number): Buffer {
  if (n > BLOCK) return randomBytes(n);
  if (at + n > block.length) {
    block = randomBytes(BLOCK);
    at = 0;
  }
  const slice = block.subarray(at, at + n);
  at += n;
  return slice;
}

/** `prefix_` + base58 of byteLength CSPRNG bytes (just the base58 part without a prefix). */
export function generateKey(prefix: string | undefined, byteLength: number): { key: string; start: string } {
  const bytes = randomSlice(byteLength);
  const random = bs58.encode(bytes);
  bytes.fill(0);
  const head = random.slice(0, 4);
  if (prefix === undefined || prefix === "") return { key: random, start: head };
  return { key: `${prefix}_${random}`, start: `${prefix}_${head}` };
}

/** What is stored and looked up: standard base64 of SHA-256 of the whole key (44 characters). */
export function hashKey(key: string): string {
  return hash("sha256", key, "base64");
}
