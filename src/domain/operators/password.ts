// Operator passwords, hashed with scrypt (memory-hard, built into Node) and stored
// as `scrypt$N$r$p$salt$hash` (salt and hash in base64url), so the cost can be
// raised later without breaking stored hashes. scrypt runs on libuv's thread
// pool: hashing never blocks the event loop.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

export const MIN_PASSWORD_LENGTH = 12;
/** Longer inputs are refused rather than hashed: nobody types more, and it bounds the work per attempt. */
export const MAX_PASSWORD_LENGTH = 1024;

const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;
// scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is exactly that, so leave headroom.
const maxmem = (n: number, r: number) => 128 * n * r * 2;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, KEY_LEN, { N: n, r, p, maxmem: maxmem(n, r) }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{32,128})$/;

/** Whether the password matches the stored string; a malformed string matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = FORMAT.exec(stored);
  if (m === null) return false;
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const expected = Buffer.from(m[5] as string, "base64url");
  // Parameters outside what this code ever writes are refused, not run (a huge N would be a memory bomb).
  if (n < 2 ** 14 || n > 2 ** 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16 || expected.length !== KEY_LEN) return false;
  const key = await derive(password, Buffer.from(m[4] as string, "base64url"), n, r, p);
  return timingSafeEqual(key, expected);
}

/**
 * A hash of a password nobody knows, checked when the email is unknown so that
 * the answer takes as long as for a wrong password (no account enumeration by timing).
 */
let dummy: Promise<string> | undefined;
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString("hex"));
  return dummy;
}
