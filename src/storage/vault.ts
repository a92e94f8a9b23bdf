// AES-256-GCM envelope encryption for recoverable keys. Each workspace has its
// own data key, stored wrapped (encrypted) by the key-encryption key from the
// configuration, so a database dump alone reveals no plaintext key.
// Stored form: "v1." + base64(12-byte nonce | ciphertext | 16-byte tag).
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Pool } from "mysql2/promise";
import type { Vault } from "../domain/keys/vault.js";
import { newId } from "../domain/ids.js";
import { exec, isDuplicateKey, one } from "./sql.js";

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

export class DatabaseVault implements Vault {
  private readonly dataKeys = new Map<string, { id: string; key: Buffer }>();

  constructor(
    private readonly pool: Pool,
    private readonly kek: Buffer,
  ) {
    if (kek.length !== 32) throw new Error("the key-encryption key must be 32 bytes");
  }

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
    let row = await one(this.pool, "SELECT id, wrapped FROM encryption_keys WHERE workspace_id = ?", [workspaceId]);
    if (!row) {
      const id = newId("dek");
      const key = randomBytes(32);
      try {
        await exec(this.pool, "INSERT INTO encryption_keys (id, workspace_id, wrapped, created_at_m) VALUES (?, ?, ?, ?)", [
          id,
          workspaceId,
          seal(this.kek, key, `kek/${workspaceId}/${id}`),
          Date.now(),
        ]);
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      row = await one(this.pool, "SELECT id, wrapped FROM encryption_keys WHERE workspace_id = ?", [workspaceId]);
      if (!row) throw new Error("data key vanished");
    }
    const id = String(row.id);
    const dk = { id, key: open(this.kek, String(row.wrapped), `kek/${workspaceId}/${id}`) };
    this.dataKeys.set(workspaceId, dk);
    return dk;
  }
}
