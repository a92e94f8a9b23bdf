import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";

// Root keys are `svc_` + base58 of 24 random bytes followed by a 4-byte
// checksum (the first bytes of their SHA-256), padded to a fixed width. A
// truncated or altered root key therefore fails the format check and is
// reported as `malformed` without touching the database (docs/auth.md, "Root keys").
// The checksum is not a secret: it only detects damage, it proves nothing.
export const ROOT_KEY_PREFIX = "svc";
const RANDOM_BYTES = 24;
const CHECK_BYTES = 4;
const WIDTH = 39; // max base58 digits for 28 bytes
const SHAPE = /^svc_[1-9A-HJ-NP-Za-km-z]{39}$/;
/** Every root key's length: the prefix, its underscore and WIDTH digits. */
export const ROOT_KEY_LENGTH = ROOT_KEY_PREFIX.length + 1 + WIDTH;

const checksum = (payload: Buffer): Buffer => createHash("sha256").update(payload).digest().subarray(0, CHECK_BYTES);

export function generateRootKey(): string {
  const payload = randomBytes(RANDOM_BYTES);
  const bytes = Buffer.concat([payload, checksum(payload)]);
  return `${ROOT_KEY_PREFIX}_${bs58.encode(bytes).padStart(WIDTH, "1")}`;
}

/** The cheap part of the check: prefix, alphabet and length. */
export const hasRootKeyShape = (key: string): boolean => SHAPE.test(key);

/** True when the string has a root key's exact shape and its checksum holds. */
export function isWellFormedRootKey(key: string): boolean {
  if (!SHAPE.test(key)) return false;
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(key.slice(ROOT_KEY_PREFIX.length + 1));
  } catch {
    return false;
  }
  // Leading '1's decode to zero bytes; restore the fixed length.
  const total = RANDOM_BYTES + CHECK_BYTES;
  // Padding '1's decode to leading zero bytes: keep the last `total` bytes if only zeros precede them.
  let b = Buffer.from(bytes);
  if (b.length > total) {
    if (b.subarray(0, b.length - total).some((x) => x !== 0)) return false;
    b = b.subarray(b.length - total);
  }
  const full = Buffer.alloc(total);
  b.copy(full, total - b.length);
  const payload = full.subarray(0, RANDOM_BYTES);
  return checksum(payload).equals(full.subarray(RANDOM_BYTES));
}
