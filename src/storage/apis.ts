import { exec, one, type Queryable } from "./sql.js";

export interface ApiRow {
  id: string;
  workspaceId: string;
  name: string;
  keyAuthId: string;
  deleteProtection: boolean;
  storeEncryptedKeys: boolean;
  defaultPrefix: string | undefined;
  defaultBytes: number | undefined;
}

export async function insertApi(db: Queryable, a: { id: string; keyAuthId: string; workspaceId: string; name: string; now: number }): Promise<void> {
  await exec(db, "INSERT INTO key_auth (id, workspace_id, store_encrypted_keys, created_at_m) VALUES (?, ?, TRUE, ?)", [a.keyAuthId, a.workspaceId, a.now]);
  await exec(db, "INSERT INTO apis (id, workspace_id, name, key_auth_id, created_at_m) VALUES (?, ?, ?, ?, ?)", [
    a.id,
    a.workspaceId,
    a.name,
    a.keyAuthId,
    a.now,
  ]);
}

/** A live API of this workspace (another workspace's API is reported as missing). */
export async function findLiveApi(db: Queryable, workspaceId: string, apiId: string): Promise<ApiRow | undefined> {
  const r = await one(
    db,
    `SELECT a.id, a.workspace_id, a.name, a.key_auth_id, a.delete_protection,
            ka.store_encrypted_keys, ka.default_prefix, ka.default_bytes
       FROM apis a JOIN key_auth ka ON ka.id = a.key_auth_id
      WHERE a.id = ? AND a.workspace_id = ? AND a.deleted_at_m IS NULL`,
    [apiId, workspaceId],
  );
  if (!r) return undefined;
  return {
    id: String(r.id),
    workspaceId: String(r.workspace_id),
    name: String(r.name),
    keyAuthId: String(r.key_auth_id),
    deleteProtection: Boolean(r.delete_protection),
    storeEncryptedKeys: Boolean(r.store_encrypted_keys),
    defaultPrefix: r.default_prefix === null ? undefined : String(r.default_prefix),
    defaultBytes: r.default_bytes === null ? undefined : Number(r.default_bytes),
  };
}

/** Soft delete; false when it was not live (a concurrent delete). */
export async function softDeleteApi(db: Queryable, workspaceId: string, apiId: string, now: number): Promise<boolean> {
  const r = await exec(db, "UPDATE apis SET deleted_at_m = ? WHERE id = ? AND workspace_id = ? AND deleted_at_m IS NULL", [now, apiId, workspaceId]);
  return r.affectedRows === 1;
}
