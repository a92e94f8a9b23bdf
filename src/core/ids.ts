import { randomBytes } from "node:crypto";

// Resource ids are `<prefix>_` + a fixed-width base58 string: 6 bytes of the
// creation time in ms, then 10 random bytes. The Bitcoin base58 alphabet is in
// ASCII order and the width is fixed, so ids sort by creation time under a
// binary collation, which keeps cursor pages stable and roughly chronological.

export type IdPrefix = "key" | "api" | "ks" | "id" | "perm" | "role" | "rl" | "rlns" | "rlor" | "ws" | "req" | "dek" | "mig" | "log";

// Random bytes are drawn in blocks: one syscall per 256 ids instead of one per id.
let pool = Buffer.alloc(0);
let at = 0;

// The 16 bytes of an id as eight 16-bit big-endian limbs: 3 of time, 5 random.
const limbs = new Array<number>(8).fill(0);

export function newId(prefix: IdPrefix, nowMs: number = Date.now()): string {
  const t = Math.max(0, Math.floor(nowMs)) % 2 ** 48;
  const hi = Math.floor(t / 2 ** 32);
  const lo = t - hi * 2 ** 32;
  limbs[0] = hi;
  limbs[1] = lo >>> 16;
  limbs[2] = lo & 0xffff;
  if (at + 10 > pool.length) {
    pool = randomBytes(2560);
    at = 0;
  }
  for (let i = 3; i < 8; i++, at += 2) limbs[i] = ((pool[at] as number) << 8) | (pool[at + 1] as number);
  return `${prefix}_${base58OfLimbs()}`;
}

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/** Two base58 digits for each value below 58^2. */
const PAIRS = Array.from({ length: 58 * 58 }, (_, i) => `${ALPHABET[Math.floor(i / 58)]}${ALPHABET[i % 58]}`);
const BASE4 = 58 ** 4;

/** The base58 of 16 bytes, as `bs58.encode(bytes).padStart(22, "1")` has it (ids.test.ts compares them). */
export function base58Of16(bytes: Uint8Array): string {
  for (let i = 0; i < 8; i++) limbs[i] = ((bytes[2 * i] as number) << 8) | (bytes[2 * i + 1] as number);
  return base58OfLimbs();
}

/**
 * 22 base58 digits of the 128-bit number in `limbs` (which it consumes), by long
 * division by 58^4, four digits a pass, with no Buffer. bs58's general encoder,
 * with the Buffer an id was built in, was ~1.6 µs of a hot verification's ~30 µs
 * of CPU here, for the request id alone; this is about a third of that.
 */
function base58OfLimbs(): string {
  let out = "";
  for (let pass = 0; pass < 6; pass++) {
    let rem = 0;
    for (let i = 0; i < 8; i++) {
      // rem < 58^4 < 2^24, so rem * 2^16 + limb < 2^40: exact in a double.
      const cur = rem * 65536 + (limbs[i] as number);
      const q = Math.floor(cur / BASE4);
      limbs[i] = q;
      rem = cur - q * BASE4;
    }
    const high = Math.floor(rem / 3364);
    const four = (PAIRS[high] as string) + (PAIRS[rem - high * 3364] as string);
    // 128 bits are below 58^22: of the 24 digits made, the first two are always '1'.
    out = pass === 5 ? four.slice(2) + out : four + out;
  }
  return out;
}

// Request ids have the same shape, but one is made for every request: a fresh
// id's first 20 digits serve 3,364 requests, each ending in its own 2 digits.
// A new id's division was ~0.9 µs of a hot verification's ~24 µs of CPU here.
let head = "";
let served = PAIRS.length;

/** `req_` + 22 base58 digits, unique (20 digits of a fresh id, then a counter's 2). */
export function requestId(): string {
  if (served === PAIRS.length) {
    head = newId("req").slice(0, -2);
    served = 0;
  }
  return head + (PAIRS[served++] as string);
}
