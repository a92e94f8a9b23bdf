import { exec, placeholders, type Queryable, rows, type Statement } from "./sql.js";

export async function insertEncryptedKey(db: Queryable, e: EncryptedKeyRow): Promise<void> {
  const { sql, params } = encryptedKeyInsert(e);
  await exec(db, sql, params);
}

interface EncryptedKeyRow {
  workspaceId: string;
  keyId: string;
  encrypted: string;
  encryptionKeyId: string;
  now: number;
}

export function encryptedKeyInsert(e: EncryptedKeyRow): Statement {
  return {
    sql: "INSERT INTO encrypted_keys (workspace_id, key_id, encrypted, encryption_key_id, created_at_m) VALUES (?, ?, ?, ?, ?)",
    rows: true,
    params: [e.workspaceId, e.keyId, e.encrypted, e.encryptionKeyId, e.now],
  };
}

export async function findEncryptedKeys(db: Queryable, keyIds: string[]): Promise<Map<string, { encrypted: string; encryptionKeyId: string }>> {
  const rs = await rows(db, `SELECT key_id, encrypted, encryption_key_id FROM encrypted_keys WHERE key_id IN (${placeholders(keyIds.length)})`, keyIds);
  return new Map(rs.map((r) => [String(r.key_id), { encrypted: String(r.encrypted), encryptionKeyId: String(r.encryption_key_id) }]));
}

export async function softDeleteKey(db: Queryable, keyId: string, now: number): Promise<boolean> {
  const r = await exec(db, "UPDATE `keys` SET deleted_at_m = ? WHERE id = ? AND deleted_at_m IS NULL", [now, keyId]);
  return r.affectedRows === 1;
}

/** Removes the key row and everything attached to it. */
export async function deleteKeyRow(db: Queryable, keyId: string): Promise<boolean> {
  const r = await exec(db, "DELETE FROM `keys` WHERE id = ?", [keyId]);
  await exec(db, "DELETE FROM keys_permissions WHERE key_id = ?", [keyId]);
  await exec(db, "DELETE FROM keys_roles WHERE key_id = ?", [keyId]);
  await exec(db, "DELETE FROM ratelimits WHERE key_id = ?", [keyId]);
  await exec(db, "DELETE FROM encrypted_keys WHERE key_id = ?", [keyId]);
  await exec(db, "DELETE FROM keys_last_used WHERE key_id = ?", [keyId]);
  return r.affectedRows === 1;
}
