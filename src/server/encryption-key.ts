// The key-encryption keys, from the configuration. Outside production an unset
// KEYHOLD_ENCRYPTION_KEY falls back to a key kept (mode 0600) under .keyhold/, said
// once at warn; in production loadConfig has already refused to start without it.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../core/logger.js";
import { stateDir } from "../paths.js";
import { Keyring } from "../storage/vault.js";
import type { Config } from "./config.js";

export const keyFile = path.join(stateDir, "encryption.key");

/** A new random key-encryption key in the accepted format (base64 of 32 bytes). */
export const generateEncryptionKey = (): string => randomBytes(32).toString("base64");

export function loadKeyring(config: Pick<Config, "encryptionKey" | "previousEncryptionKeys">, log: Pick<Logger, "warn">): Keyring {
  const previous = config.previousEncryptionKeys.map((k) => Buffer.from(k, "base64"));
  if (config.encryptionKey !== undefined) return new Keyring(Buffer.from(config.encryptionKey, "base64"), previous);
  const { key, created } = localKey();
  log.warn(
    { file: keyFile },
    `${created ? "created" : "using"} the local key-encryption key file for recoverable keys; production needs KEYHOLD_ENCRYPTION_KEY (set it on every instance and back it up)`,
  );
  return new Keyring(key, previous);
}

function localKey(): { key: Buffer; created: boolean } {
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const existing = readKeyFile();
  if (existing) return { key: existing, created: false };
  const key = generateEncryptionKey();
  // Written whole under a temporary name, then linked into place: a process starting
  // at the same moment sees either no file or the complete one, never a half-written one.
  const tmp = `${keyFile}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${key}\n`, { mode: 0o600 });
  try {
    fs.linkSync(tmp, keyFile);
    return { key: Buffer.from(key, "base64"), created: true };
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return { key: readKeyFile() ?? fail(), created: false };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

function readKeyFile(): Buffer | undefined {
  let text: string;
  try {
    text = fs.readFileSync(keyFile, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const key = Buffer.from(text.trim(), "base64");
  return key.length === 32 ? key : fail();
}

function fail(): never {
  throw new Error(`${keyFile} does not hold a base64 32-byte key`);
}
