// A key's direct permissions and roles, read and changed by slug or role id.
// The writes run inside the caller's transaction, after the key row is locked
// (lockLiveKey), so concurrent grant changes to one key apply one after another.
import type { PermissionRow, RoleRow } from "./rbac.js";
import { exec, one, optStr, placeholders, type Queryable, type Row, rows } from "./sql.js";

// The same shapes permissions.* returns (storage/rbac.ts).
export type { PermissionRow, RoleRow };

const toPermission = (r: Row): PermissionRow => ({
  id: String(r.id),
  name: String(r.name),
  slug: String(r.slug),
  description: optStr(r.description),
});

/** Locks a live key's row until the transaction ends; false when the key is gone. */
export async function lockLiveKey(db: Queryable, keyId: string): Promise<boolean> {
  return (await one(db, "SELECT id FROM `keys` WHERE id = ? AND deleted_at_m IS NULL FOR UPDATE", [keyId])) !== undefined;
}

/** The slugs (in the given order, without repeats) that no permission of the workspace has. */
export async function missingPermissionSlugs(db: Queryable, workspaceId: string, slugs: readonly string[]): Promise<string[]> {
  const unique = [...new Set(slugs)];
  if (unique.length === 0) return [];
  const found = await rows(db, `SELECT slug FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(unique.length)})`, [workspaceId, ...unique]);
  const have = new Set(found.map((r) => String(r.slug)));
  return unique.filter((s) => !have.has(s));
}

/**
 * Attaches the workspace's permissions with these slugs (already attached ones
 * are left alone). Inserting from a SELECT on `permissions` share-locks those
 * rows, so a permission deleted meanwhile is simply not attached, never left
 * dangling.
 */
export async function linkPermissionSlugs(db: Queryable, workspaceId: string, keyId: string, slugs: readonly string[], now: number): Promise<void> {
  if (slugs.length === 0) return;
  await exec(
    db,
    `INSERT IGNORE INTO keys_permissions (key_id, permission_id, workspace_id, created_at_m)
     SELECT ?, id, workspace_id, ? FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(slugs.length)})`,
    [keyId, now, workspaceId, ...slugs],
  );
}

/** Detaches the permissions with these slugs (those not attached are ignored). */
export async function unlinkPermissionSlugs(db: Queryable, workspaceId: string, keyId: string, slugs: readonly string[]): Promise<void> {
  if (slugs.length === 0) return;
  await exec(
    db,
    `DELETE FROM keys_permissions WHERE key_id = ? AND permission_id IN
       (SELECT id FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(slugs.length)}))`,
    [keyId, workspaceId, ...slugs],
  );
}

/** Detaches every direct permission whose slug is not in `keep` (all of them when keep is empty). */
export async function unlinkPermissionsExcept(db: Queryable, workspaceId: string, keyId: string, keep: readonly string[]): Promise<void> {
  if (keep.length === 0) {
    await exec(db, "DELETE FROM keys_permissions WHERE key_id = ?", [keyId]);
    return;
  }
  await exec(
    db,
    `DELETE FROM keys_permissions WHERE key_id = ? AND permission_id NOT IN
       (SELECT id FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(keep.length)}))`,
    [keyId, workspaceId, ...keep],
  );
}

/** The ids of the key's direct permissions: what a change is compared with, for its audit record. */
export async function keyPermissionIds(db: Queryable, keyId: string): Promise<string[]> {
  return (await rows(db, "SELECT permission_id FROM keys_permissions WHERE key_id = ?", [keyId])).map((r) => String(r.permission_id));
}

/** The ids of the key's roles, as keyPermissionIds. */
export async function keyRoleIds(db: Queryable, keyId: string): Promise<string[]> {
  return (await rows(db, "SELECT role_id FROM keys_roles WHERE key_id = ?", [keyId])).map((r) => String(r.role_id));
}

/** The key's direct permissions (not those from roles), by slug. */
export async function listKeyPermissions(db: Queryable, keyId: string): Promise<PermissionRow[]> {
  const rs = await rows(
    db,
    `SELECT p.id, p.name, p.slug, p.description FROM keys_permissions kp JOIN permissions p ON p.id = kp.permission_id
     WHERE kp.key_id = ? ORDER BY p.slug`,
    [keyId],
  );
  return rs.map(toPermission);
}

/**
 * Ids of these role names, share-locked until the transaction ends so none can
 * be deleted before it is attached; the first name (in request order) that
 * names no role is returned separately.
 */
export async function lockRolesByName(db: Queryable, workspaceId: string, names: readonly string[]): Promise<{ ids: string[]; missing: string | undefined }> {
  const unique = [...new Set(names)];
  if (unique.length === 0) return { ids: [], missing: undefined };
  const found = await rows(db, `SELECT id, name FROM roles WHERE workspace_id = ? AND name IN (${placeholders(unique.length)}) LOCK IN SHARE MODE`, [
    workspaceId,
    ...unique,
  ]);
  // The collation ignores trailing spaces: `admin ` finds `admin`, which is not the role asked for.
  const byName = new Map(found.map((r) => [String(r.name), String(r.id)]));
  const missing = unique.find((n) => !byName.has(n));
  return { ids: unique.flatMap((n) => byName.get(n) ?? []), missing };
}

/** Detaches these roles (those not attached are ignored). */
export async function unlinkRoles(db: Queryable, keyId: string, roleIds: readonly string[]): Promise<void> {
  if (roleIds.length === 0) return;
  await exec(db, `DELETE FROM keys_roles WHERE key_id = ? AND role_id IN (${placeholders(roleIds.length)})`, [keyId, ...roleIds]);
}

/** Detaches every role not in `keep` (all of them when keep is empty). */
export async function unlinkRolesExcept(db: Queryable, keyId: string, keep: readonly string[]): Promise<void> {
  if (keep.length === 0) {
    await exec(db, "DELETE FROM keys_roles WHERE key_id = ?", [keyId]);
    return;
  }
  await exec(db, `DELETE FROM keys_roles WHERE key_id = ? AND role_id NOT IN (${placeholders(keep.length)})`, [keyId, ...keep]);
}

/** The key's roles by name, each with its permissions by slug. */
export async function listKeyRoles(db: Queryable, keyId: string): Promise<RoleRow[]> {
  const roleRows = await rows(
    db,
    "SELECT r.id, r.name, r.description FROM keys_roles kr JOIN roles r ON r.id = kr.role_id WHERE kr.key_id = ? ORDER BY r.name",
    [keyId],
  );
  if (roleRows.length === 0) return [];
  const ids = roleRows.map((r) => String(r.id));
  const permRows = await rows(
    db,
    `SELECT rp.role_id, p.id, p.name, p.slug, p.description FROM roles_permissions rp JOIN permissions p ON p.id = rp.permission_id
     WHERE rp.role_id IN (${placeholders(ids.length)}) ORDER BY p.slug`,
    ids,
  );
  const byRole = new Map<string, PermissionRow[]>();
  for (const r of permRows) {
    const id = String(r.role_id);
    let list = byRole.get(id);
    if (list === undefined) byRole.set(id, (list = []));
    list.push(toPermission(r));
  }
  return roleRows.map((r) => ({
    id: String(r.id),
    name: String(r.name),
    description: optStr(r.description),
    permissions: byRole.get(String(r.id)) ?? [],
  }));
}
