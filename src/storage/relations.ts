import { ensureIdentities, ensurePermissionSlugs, type OnCreated } from "./key-migrations.js";
import { exec, one, type Pool, placeholders, type Queryable, rows } from "./sql.js";

/** The live identity with this externalId, created (meta `{}`) when missing. */
export async function upsertIdentity(
  db: Queryable,
  workspaceId: string,
  externalId: string,
  now: number,
  onCreated?: { pool: Pool; created: OnCreated },
): Promise<string> {
  const id = (await ensureIdentities(db, workspaceId, [externalId], now, onCreated)).get(externalId);
  // Deleted by a concurrent deleteIdentity between being made and read back.
  if (id === undefined) throw new RelationVanished();
  return id;
}

export async function findLiveIdentityIdByExternalId(db: Queryable, workspaceId: string, externalId: string): Promise<string | undefined> {
  const r = await one(db, "SELECT id FROM identities WHERE workspace_id = ? AND external_id = ? AND deleted = 0", [workspaceId, externalId]);
  return r ? String(r.id) : undefined;
}

/**
 * Ids of these permission slugs, creating the missing ones (name = slug). Without
 * `onCreated` it runs outside a transaction (each statement commits), so
 * concurrent callers find each other's rows; with it, the new rows and their
 * audit records commit together (storage/key-migrations.ts, ensureNamed).
 */
export async function ensurePermissions(
  db: Queryable,
  workspaceId: string,
  slugs: readonly string[],
  now: number,
  onCreated?: { pool: Pool; created: OnCreated },
): Promise<string[]> {
  if (slugs.length === 0) return [];
  return [...(await ensurePermissionSlugs(db, workspaceId, slugs, now, onCreated)).values()];
}

/** Ids of these role names; the first missing name is returned separately. */
export async function findRoles(db: Queryable, workspaceId: string, names: readonly string[]): Promise<{ ids: string[]; missing: string | undefined }> {
  const unique = [...new Set(names)];
  if (unique.length === 0) return { ids: [], missing: undefined };
  const found = await rows(db, `SELECT id, name FROM roles WHERE workspace_id = ? AND name IN (${placeholders(unique.length)})`, [workspaceId, ...unique]);
  const byName = new Map(found.map((r) => [String(r.name), String(r.id)]));
  return { ids: [...byName.values()], missing: unique.find((n) => !byName.has(n)) };
}

/**
 * The ids among these that still exist, share-locked until the transaction ends,
 * so they cannot be deleted before the links made to them commit. (A locking
 * read then plain INSERTs, not INSERT ... SELECT: concurrent INSERT ... SELECTs
 * into an AUTO_INCREMENT table fail on MariaDB with "Failed to read
 * auto-increment value from storage engine".)
 */
export async function lockExisting(db: Queryable, table: "permissions" | "roles", workspaceId: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = await rows(db, `SELECT id FROM ${table} WHERE workspace_id = ? AND id IN (${placeholders(ids.length)}) LOCK IN SHARE MODE`, [
    workspaceId,
    ...ids,
  ]);
  return found.map((r) => String(r.id));
}

/**
 * Attaches these permissions to the key, those that still exist (never a
 * dangling link). Returns how many exist; fewer than asked means some were deleted.
 */
export async function linkPermissions(db: Queryable, workspaceId: string, keyId: string, permissionIds: string[], now: number): Promise<number> {
  const live = await lockExisting(db, "permissions", workspaceId, permissionIds);
  if (live.length === 0) return 0;
  await exec(
    db,
    `INSERT IGNORE INTO keys_permissions (key_id, permission_id, workspace_id, created_at_m) VALUES ${live.map(() => "(?, ?, ?, ?)").join(", ")}`,
    live.flatMap((p) => [keyId, p, workspaceId, now]),
  );
  return live.length;
}

/** Attaches these roles to the key, as linkPermissions does permissions; returns how many were attached. */
export async function linkRoles(db: Queryable, workspaceId: string, keyId: string, roleIds: string[], now: number): Promise<number> {
  const live = await lockExisting(db, "roles", workspaceId, roleIds);
  if (live.length === 0) return 0;
  await exec(
    db,
    `INSERT IGNORE INTO keys_roles (key_id, role_id, workspace_id, created_at_m) VALUES ${live.map(() => "(?, ?, ?, ?)").join(", ")}`,
    live.flatMap((r) => [keyId, r, workspaceId, now]),
  );
  return live.length;
}

/** A permission or role deleted between being looked up and being attached to a key. */
export class RelationVanished extends Error {}
