import { hash, randomBytes } from "node:crypto";
import bs58 from "bs58";

/** `prefix_` + base58 of byteLength CSPRNG bytes (just the base58 part without a prefix). */
export function generateKey(prefix: string | undefined, byteLength: number): { key: string; start: string } {
  const random = bs58.encode(randomBytes(byteLength));
  const head = random.slice(0, 4);
  if (prefix === undefined || prefix === "") return { key: random, start: head };
  return { key: `${prefix}_${random}`, start: `${prefix}_${head}` };
}

/** What is stored and looked up: standard base64 of SHA-256 of the whole key (44 characters). */
export function hashKey(key: string): string {
  return hash("sha256", key, "base64");
}
