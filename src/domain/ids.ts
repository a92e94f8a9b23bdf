import { randomBytes } from "node:crypto";
import bs58 from "bs58";

// Resource ids are `<prefix>_` + a fixed-width base58 string: 6 bytes of the
// creation time in ms, then 10 random bytes. The Bitcoin base58 alphabet is in
// ASCII order and the width is fixed, so ids sort by creation time under a
// binary collation, which keeps cursor pages stable and roughly chronological.
const WIDTH = 22; // base58 digits for 16 bytes

export type IdPrefix = "key" | "api" | "ks" | "id" | "perm" | "role" | "rl" | "rlns" | "rlor" | "ws" | "req" | "dek" | "mig";

// Random bytes are drawn in blocks: one syscall per 256 ids instead of one per id.
let pool = Buffer.alloc(0);
let at = 0;
function random10(target: Buffer, offset: number): void {
  if (at + 10 > pool.length) {
    pool = randomBytes(2560);
    at = 0;
  }
  pool.copy(target, offset, at, at + 10);
  at += 10;
}

export function newId(prefix: IdPrefix, nowMs: number = Date.now()): string {
  const buf = Buffer.allocUnsafe(16);
  buf.writeUIntBE(Math.max(0, Math.floor(nowMs)) % 2 ** 48, 0, 6);
  random10(buf, 6);
  return `${prefix}_${bs58.encode(buf).padStart(WIDTH, "1")}`;
}
