// AES-256-GCM envelope encryption for recoverable keys. Each workspace has its
// own data key, stored wrapped (encrypted) by a key-encryption key (KEK) from the
// configuration, so a database dump alone reveals no plaintext key.
// Stored form: "v1." + base64(12-byte nonce | ciphertext | 16-byte tag).
//
// Each wrapped data key records the id (a fingerprint) of the KEK that wrapped it.
// The keyring holds the current KEK (wraps new data keys) and retired ones that
// may still unwrap; rewrapDataKeys moves every data key to the current KEK, after
// which the retired ones can be dropped. The data keys themselves never change,
// so ciphertexts are never re-encrypted.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { AppError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import type { Logger } from "../core/logger.js";
import type { Pool } from "./sql.js";
import { exec, isDuplicateKey, one, rows } from "./sql.js";

/** Encrypts recoverable keys at rest (implemented by PerWorkspaceVault below). */
export interface Vault {
  encrypt(workspaceId: string, plaintext: string): Promise<{ encrypted: string; encryptionKeyId: string }>;
  decrypt(workspaceId: string, encrypted: string, encryptionKeyId: string): Promise<string>;
}

/**
 * No configured key-encryption key opens the workspace's data key: the server is
 * misconfigured (a retired key was dropped too early, or a key is missing), not the
 * request. Answered as a 503 so neither a wrong plaintext-less answer nor a new data
 * key (which would orphan the old ciphertexts) hides it.
 */
export class VaultUnavailableError extends AppError {
  constructor() {
    super(
      "err:svc:application:service_unavailable",
      "Recoverable keys cannot be encrypted or decrypted right now: this server is not configured with the key-encryption key that protects this workspace's keys.",
    );
  }
}

function seal(key: Buffer, plaintext: Buffer, aad: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `v1.${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64")}`;
}

function open(key: Buffer, sealed: string, aad: string): Buffer {
  if (!sealed.startsWith("v1.")) throw new Error("unknown ciphertext version");
  const raw = Buffer.from(sealed.slice(3), "base64");
  const nonce = raw.subarray(0, 12);
  const tag = raw.subarray(raw.length - 16);
  const decipher = createDecipheriv("aes-256-gcm", key, nonce);
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
}

export interface Kek {
  /** First 8 bytes of SHA-256 of the key, in hex: names the key in rows and logs without revealing it. */
  id: string;
  key: Buffer;
}

export function kekId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

/** The current KEK and the retired ones that may still unwrap. */
export class Keyring {
  readonly current: Kek;
  /** Current first, then the retired ones, without duplicates. */
  readonly all: Kek[];

  constructor(current: Buffer, previous: Buffer[] = []) {
    const all = new Map<string, Kek>();
    for (const key of [current, ...previous]) {
      if (key.length !== 32) throw new Error("a key-encryption key must be 32 bytes");
      all.set(kekId(key), { id: kekId(key), key });
    }
    this.all = [...all.values()];
    this.current = this.all[0] as Kek;
  }

  /** The KEKs that may have wrapped a row: the one it names, or (rows from before ids were recorded) any. */
  candidates(id: string | null): Kek[] {
    return id === null ? this.all : this.all.filter((k) => k.id === id);
  }
}

interface WrappedRow {
  pk: number;
  id: string;
  workspaceId: string;
  wrapped: string;
  kekId: string | null;
}

const wrapAad = (workspaceId: string, dataKeyId: string) => `kek/${workspaceId}/${dataKeyId}`;

/** Unwraps a data key with whichever candidate KEK opens it; undefined when none does. */
function unwrap(keyring: Keyring, row: WrappedRow): Buffer | undefined {
  for (const kek of keyring.candidates(row.kekId)) {
    try {
      return open(kek.key, row.wrapped, wrapAad(row.workspaceId, row.id));
    } catch {
      // Not this one (only possible for rows without a kek id): try the next.
    }
  }
  return undefined;
}

function toRow(r: Record<string, unknown>): WrappedRow {
  return {
    pk: Number(r.pk),
    id: String(r.id),
    workspaceId: String(r.workspace_id),
    wrapped: String(r.wrapped),
    kekId: r.kek_id === null || r.kek_id === undefined ? null : String(r.kek_id),
  };
}

const SELECT = "SELECT pk, id, workspace_id, wrapped, kek_id FROM encryption_keys";

export class DatabaseVault implements Vault {
  private readonly dataKeys = new Map<string, { id: string; key: Buffer }>();
  /** Workspaces whose missing KEK was already logged, so a misconfiguration logs once, not per request. */
  private readonly reported = new Set<string>();

  constructor(
    private readonly pool: Pool,
    private readonly keyring: Keyring,
    private readonly log: Logger,
  ) {}

  async encrypt(workspaceId: string, plaintext: string): Promise<{ encrypted: string; encryptionKeyId: string }> {
    const dk = await this.dataKey(workspaceId);
    return { encrypted: seal(dk.key, Buffer.from(plaintext, "utf8"), `${workspaceId}/${dk.id}`), encryptionKeyId: dk.id };
  }

  async decrypt(workspaceId: string, encrypted: string, encryptionKeyId: string): Promise<string> {
    const dk = await this.dataKey(workspaceId);
    if (dk.id !== encryptionKeyId) throw new Error(`data key ${encryptionKeyId} is not the workspace's`);
    return open(dk.key, encrypted, `${workspaceId}/${dk.id}`).toString("utf8");
  }

  private async dataKey(workspaceId: string): Promise<{ id: string; key: Buffer }> {
    const cached = this.dataKeys.get(workspaceId);
    if (cached) return cached;
    const select = async () => {
      const r = await one(this.pool, `${SELECT} WHERE workspace_id = ?`, [workspaceId]);
      return r ? toRow(r) : undefined;
    };
    let row = await select();
    if (!row) {
      await this.createDataKey(workspaceId);
      row = await select();
      if (!row) throw new Error("data key vanished");
    }
    // A row no configured KEK opens stays as it is: replacing it would orphan every ciphertext under it.
    const key = unwrap(this.keyring, row);
    if (!key) {
      this.reportMissing(row);
      throw new VaultUnavailableError();
    }
    const dk = { id: row.id, key };
    this.dataKeys.set(workspaceId, dk);
    return dk;
  }

  private async createDataKey(workspaceId: string): Promise<void> {
    const id = newId("dek");
    const kek = this.keyring.current;
    try {
      await exec(this.pool, "INSERT INTO encryption_keys (id, workspace_id, wrapped, kek_id, created_at_m) VALUES (?, ?, ?, ?, ?)", [
        id,
        workspaceId,
        seal(kek.key, randomBytes(32), wrapAad(workspaceId, id)),
        kek.id,
        Date.now(),
      ]);
    } catch (err) {
      // Another request or instance created the workspace's data key first: use theirs.
      if (!isDuplicateKey(err)) throw err;
    }
  }

  private reportMissing(row: WrappedRow): void {
    if (this.reported.has(row.workspaceId)) return;
    this.reported.add(row.workspaceId);
    this.log.error(
      { workspaceId: row.workspaceId, dataKeyId: row.id, kekId: row.kekId ?? "(not recorded)", configuredKekIds: this.keyring.all.map((k) => k.id) },
      row.kekId === null
        ? "no configured key-encryption key opens this workspace's data key; add the key it was created under to KEYHOLD_PREVIOUS_ENCRYPTION_KEYS"
        : this.keyring.candidates(row.kekId).length > 0
          ? `this workspace's data key does not open with the configured key-encryption key ${row.kekId}: the stored row is damaged`
          : `the key-encryption key ${row.kekId} is not configured; add it to KEYHOLD_PREVIOUS_ENCRYPTION_KEYS to read this workspace's recoverable keys`,
    );
  }
}

export interface RewrapSummary {
  /** The current KEK's id: every data key is wrapped by it once failed is 0. */
  kekId: string;
  rewrapped: number;
  alreadyCurrent: number;
  failed: number;
}

/**
 * Rewraps every data key that is not wrapped by the current KEK. Idempotent, and
 * safe while servers run: only the wrapping changes (the data keys, and so every
 * ciphertext, stay the same), and each row is replaced only if it still holds what
 * was read, so concurrent runs cannot undo each other.
 */
export async function rewrapDataKeys(
  pool: Pool,
  keyring: Keyring,
  onFailure: (row: { workspaceId: string; kekId: string | null }) => void,
): Promise<RewrapSummary> {
  const summary: RewrapSummary = { kekId: keyring.current.id, rewrapped: 0, alreadyCurrent: 0, failed: 0 };
  for (let after = 0; ; ) {
    const batch = (await rows(pool, `${SELECT} WHERE pk > ? ORDER BY pk LIMIT 500`, [after])).map(toRow);
    if (batch.length === 0) return summary;
    for (const row of batch) summary[await rewrapOne(pool, keyring, row, onFailure)]++;
    after = (batch[batch.length - 1] as WrappedRow).pk;
  }
}

async function rewrapOne(
  pool: Pool,
  keyring: Keyring,
  first: WrappedRow,
  onFailure: (row: { workspaceId: string; kekId: string | null }) => void,
): Promise<"rewrapped" | "alreadyCurrent" | "failed"> {
  let row = first;
  // A lost race (another run rewrapped it meanwhile) re-reads the row and decides again.
  for (let attempt = 0; attempt < 3; attempt++) {
    if (row.kekId === keyring.current.id) return "alreadyCurrent";
    const key = unwrap(keyring, row);
    if (!key) break;
    const kek = keyring.current;
    const res = await exec(pool, "UPDATE encryption_keys SET wrapped = ?, kek_id = ? WHERE pk = ? AND wrapped = ?", [
      seal(kek.key, key, wrapAad(row.workspaceId, row.id)),
      kek.id,
      row.pk,
      row.wrapped,
    ]);
    if (res.affectedRows === 1) return "rewrapped";
    const again = await one(pool, `${SELECT} WHERE pk = ?`, [row.pk]);
    if (!again) throw new Error(`data key ${row.id} vanished during rotation`);
    row = toRow(again);
  }
  onFailure({ workspaceId: row.workspaceId, kekId: row.kekId });
  return "failed";
}
