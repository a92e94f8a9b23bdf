// Permissions, roles and the rows that attach them (roles_permissions,
// keys_permissions, keys_roles). All of it is workspace-scoped; deletes are hard
// deletes that take the attachments with them.
//
// The tables use utf8mb4_bin, which compares case-sensitively but ignores
// trailing spaces: a lookup by name or id is therefore re-checked exactly in
// JS, so `admin ` never finds the role `admin`.

import { newId } from "../core/ids.js";
import { lockExisting } from "./relations.js";
import { exec, groupBy, isDuplicateKey, optStr, placeholders, type Queryable, type Row, rows } from "./sql.js";

export interface PermissionRow {
  id: string;
  name: string;
  slug: string;
  description: string | undefined;
}

export interface RoleRow {
  id: string;
  name: string;
  description: string | undefined;
  /** The role's permissions, by slug. */
  permissions: PermissionRow[];
}

export interface Page<T> {
  items: T[];
  /** The id of the first row of the next page (inclusive cursor), when there is one. */
  next: string | undefined;
}

export interface PageQuery {
  workspaceId: string;
  limit: number;
  cursor: string | undefined;
  search: string | undefined;
}

const PERMISSION_COLUMNS = "id, name, slug, description";
const ROLE_COLUMNS = "id, name, description";

const toPermission = (r: Row): PermissionRow => ({
  id: String(r.id),
  name: String(r.name),
  slug: String(r.slug),
  description: optStr(r.description) || undefined,
});

/**
 * `%` and `_` are literal in a search term. The escape character is `!`, named
 * explicitly: the default `\` stops being one under NO_BACKSLASH_ESCAPES.
 */
const likeLiteral = (s: string): string => s.replace(/[!%_]/g, (c) => `!${c}`);

/** One page in id order: `where` plus the cursor and a case-insensitive search over `searchColumns`. */
async function page(
  db: Queryable,
  table: string,
  columns: string,
  searchColumns: readonly string[],
  q: PageQuery,
): Promise<{ rows: Row[]; next: string | undefined }> {
  const where = ["workspace_id = ?"];
  const params: string[] = [q.workspaceId];
  if (q.cursor !== undefined) {
    where.push("id >= ?");
    params.push(q.cursor);
  }
  if (q.search !== undefined && q.search !== "") {
    const term = `%${likeLiteral(q.search.toLowerCase())}%`;
    where.push(`(${searchColumns.map((c) => `LOWER(${c}) LIKE ? ESCAPE '!'`).join(" OR ")})`);
    for (const _ of searchColumns) params.push(term);
  }
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const rs = await rows(db, `SELECT ${columns} FROM ${table} WHERE ${where.join(" AND ")} ORDER BY id LIMIT ${q.limit + 1}`, params);
  return { rows: rs.slice(0, q.limit), next: rs.length > q.limit ? String(rs[q.limit]?.id) : undefined };
}

/** The row whose id is `ref`, else the one whose `column` is `ref`, compared exactly. */
const exactly = (found: Row[], column: string, ref: string): Row | undefined =>
  found.find((r) => String(r.id) === ref) ?? found.find((r) => String(r[column]) === ref);

// ---------------------------------------------------------------------------
// Permissions

/** Thrown by insertPermission when the workspace already has the slug. */
export class DuplicatePermissionSlug extends Error {}

export async function insertPermission(
  db: Queryable,
  p: { id: string; workspaceId: string; name: string; slug: string; description: string | undefined; now: number },
): Promise<void> {
  try {
    // No retryingDeadlocks here: a deadlock rolls back the caller's whole
    // transaction (and its audit record), so the transaction is what is retried.
    await exec(db, "INSERT INTO permissions (id, workspace_id, name, slug, description, created_at_m) VALUES (?, ?, ?, ?, ?, ?)", [
      p.id,
      p.workspaceId,
      p.name,
      p.slug,
      p.description ?? null,
      p.now,
    ]);
  } catch (err) {
    if (isDuplicateKey(err) && String((err as Error).message).includes("permissions_slug")) throw new DuplicatePermissionSlug();
    throw err;
  }
}

/**
 * Creates the permissions of these slugs that the workspace lacks (name = slug)
 * and returns the ids of all of them and of those this call created. Run it in a
 * transaction of its own, committed at once and before anything that links to
 * them: a concurrent creator of the same slug waits for that commit and then
 * finds this row (the final read is a locking read, which sees the latest rows
 * rather than the transaction's snapshot). Slugs go in sorted order, so two
 * callers with overlapping slugs lock them in the same order.
 */
export async function insertMissingPermissions(
  db: Queryable,
  workspaceId: string,
  slugs: readonly string[],
  now: number,
): Promise<{ ids: string[]; created: string[] }> {
  const unique = [...new Set(slugs)].sort();
  if (unique.length === 0) return { ids: [], created: [] };
  const have = await existingSlugs(db, workspaceId, unique);
  const mine = unique.filter((s) => !have.has(s)).map((slug) => ({ id: newId("perm", now), slug }));
  if (mine.length > 0) {
    await exec(
      db,
      `INSERT IGNORE INTO permissions (id, workspace_id, name, slug, description, created_at_m) VALUES ${mine.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}`,
      mine.flatMap((m) => [m.id, workspaceId, m.slug, m.slug, `Auto-created permission: ${m.slug}`, now]),
    );
  }
  const all = await rows(db, `SELECT id FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(unique.length)}) LOCK IN SHARE MODE`, [
    workspaceId,
    ...unique,
  ]);
  const ids = all.map((r) => String(r.id));
  // An id of ours is in the table only if our row went in: INSERT IGNORE skipped the slugs another caller created first.
  const present = new Set(ids);
  return { ids, created: mine.filter((m) => present.has(m.id)).map((m) => m.id) };
}

/** The permission of this workspace whose id or slug is `ref`; an id match wins (a slug may look like an id). */
export async function findPermission(db: Queryable, workspaceId: string, ref: string): Promise<PermissionRow | undefined> {
  const found = await rows(db, `SELECT ${PERMISSION_COLUMNS} FROM permissions WHERE workspace_id = ? AND (id = ? OR slug = ?)`, [workspaceId, ref, ref]);
  const row = exactly(found, "slug", ref);
  return row ? toPermission(row) : undefined;
}

/** Which of these slugs already exist in the workspace. */
export async function existingSlugs(db: Queryable, workspaceId: string, slugs: readonly string[]): Promise<Set<string>> {
  if (slugs.length === 0) return new Set();
  const found = await rows(db, `SELECT slug FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(slugs.length)})`, [workspaceId, ...slugs]);
  return new Set(found.map((r) => String(r.slug)));
}

export async function listPermissionsPage(db: Queryable, q: PageQuery): Promise<Page<PermissionRow>> {
  const p = await page(db, "permissions", PERMISSION_COLUMNS, ["id", "name", "slug", "description"], q);
  return { items: p.rows.map(toPermission), next: p.next };
}

/**
 * Deletes the permission and takes it from every role and key. Run it in a
 * transaction: the permission row is deleted (and so locked) first. False when
 * it was already gone.
 */
export async function deletePermissionRow(db: Queryable, workspaceId: string, permissionId: string): Promise<boolean> {
  const r = await exec(db, "DELETE FROM permissions WHERE id = ? AND workspace_id = ?", [permissionId, workspaceId]);
  if (r.affectedRows === 0) return false;
  await exec(db, "DELETE FROM roles_permissions WHERE permission_id = ?", [permissionId]);
  await exec(db, "DELETE FROM keys_permissions WHERE permission_id = ?", [permissionId]);
  return true;
}

// ---------------------------------------------------------------------------
// Roles

/** Thrown by insertRole when the workspace already has a role of this name. */
export class DuplicateRoleName extends Error {}

export async function insertRole(
  db: Queryable,
  r: { id: string; workspaceId: string; name: string; description: string | undefined; now: number },
): Promise<void> {
  try {
    await exec(db, "INSERT INTO roles (id, workspace_id, name, description, created_at_m) VALUES (?, ?, ?, ?, ?)", [
      r.id,
      r.workspaceId,
      r.name,
      r.description ?? null,
      r.now,
    ]);
  } catch (err) {
    if (isDuplicateKey(err) && String((err as Error).message).includes("roles_name")) throw new DuplicateRoleName();
    throw err;
  }
}

/** Whether the workspace has a role of exactly this name. */
export async function roleNameTaken(db: Queryable, workspaceId: string, name: string): Promise<boolean> {
  const found = await rows(db, "SELECT name FROM roles WHERE workspace_id = ? AND name = ?", [workspaceId, name]);
  return found.some((r) => String(r.name) === name);
}

/**
 * Attaches these permissions to the role, those that still exist, share-locked
 * so a concurrent delete waits for this transaction (never a dangling link).
 * Returns how many exist.
 */
export async function linkRolePermissions(db: Queryable, workspaceId: string, roleId: string, permissionIds: readonly string[], now: number): Promise<number> {
  const live = await lockExisting(db, "permissions", workspaceId, permissionIds);
  if (live.length === 0) return 0;
  await exec(
    db,
    `INSERT IGNORE INTO roles_permissions (role_id, permission_id, workspace_id, created_at_m) VALUES ${live.map(() => "(?, ?, ?, ?)").join(", ")}`,
    live.flatMap((id) => [roleId, id, workspaceId, now]),
  );
  return live.length;
}

/**
 * Locks the role's row until the transaction ends: changes to one role's
 * permissions apply one after another, and a concurrent deleteRole either waits
 * for this transaction or has already won. False when the role is gone.
 */
export async function lockRole(db: Queryable, workspaceId: string, roleId: string): Promise<boolean> {
  return (await rows(db, "SELECT id FROM roles WHERE id = ? AND workspace_id = ? FOR UPDATE", [roleId, workspaceId])).length > 0;
}

/** The ids of the role's permissions: what a change is compared with, for its audit record. */
export async function rolePermissionIds(db: Queryable, roleId: string): Promise<string[]> {
  return (await rows(db, "SELECT permission_id FROM roles_permissions WHERE role_id = ?", [roleId])).map((r) => String(r.permission_id));
}

/**
 * The ids of the workspace's permissions with these slugs, share-locked until
 * the transaction ends so none can be deleted before it is attached. A slug
 * whose permission was deleted meanwhile has none: fewer ids than slugs.
 */
export async function lockPermissionsBySlug(db: Queryable, workspaceId: string, slugs: readonly string[]): Promise<string[]> {
  if (slugs.length === 0) return [];
  const wanted = new Set(slugs);
  const found = await rows(db, `SELECT id, slug FROM permissions WHERE workspace_id = ? AND slug IN (${placeholders(wanted.size)}) LOCK IN SHARE MODE`, [
    workspaceId,
    ...wanted,
  ]);
  // The collation ignores trailing spaces: only exact slugs count.
  return found.filter((r) => wanted.has(String(r.slug))).map((r) => String(r.id));
}

/**
 * Makes the role's permissions exactly these (ids the caller has share-locked,
 * lockPermissionsBySlug): the others are detached, the missing ones attached.
 * Run it in a transaction, after lockRole.
 */
export async function replaceRolePermissions(db: Queryable, workspaceId: string, roleId: string, permissionIds: readonly string[], now: number): Promise<void> {
  if (permissionIds.length === 0) {
    await exec(db, "DELETE FROM roles_permissions WHERE role_id = ?", [roleId]);
    return;
  }
  await exec(db, `DELETE FROM roles_permissions WHERE role_id = ? AND permission_id NOT IN (${placeholders(permissionIds.length)})`, [
    roleId,
    ...permissionIds,
  ]);
  // Plain VALUES, not INSERT ... SELECT: see lockExisting (storage/relations.ts) for MariaDB's AUTO_INCREMENT failure.
  await exec(
    db,
    `INSERT IGNORE INTO roles_permissions (role_id, permission_id, workspace_id, created_at_m) VALUES ${permissionIds.map(() => "(?, ?, ?, ?)").join(", ")}`,
    permissionIds.flatMap((id) => [roleId, id, workspaceId, now]),
  );
}

/** The role's permissions, by slug. */
export async function listRolePermissions(db: Queryable, roleId: string): Promise<PermissionRow[]> {
  const rs = await rows(
    db,
    `SELECT p.id, p.name, p.slug, p.description FROM roles_permissions rp JOIN permissions p ON p.id = rp.permission_id
      WHERE rp.role_id = ? ORDER BY p.slug`,
    [roleId],
  );
  return rs.map(toPermission);
}

async function withPermissions(db: Queryable, base: Row[]): Promise<RoleRow[]> {
  if (base.length === 0) return [];
  const ids = base.map((r) => String(r.id));
  const linked = await rows(
    db,
    `SELECT rp.role_id, p.id, p.name, p.slug, p.description
       FROM roles_permissions rp JOIN permissions p ON p.id = rp.permission_id
      WHERE rp.role_id IN (${placeholders(ids.length)})
      ORDER BY p.slug`,
    ids,
  );
  const byRole = groupBy(linked, "role_id", toPermission);
  return base.map((r) => ({
    id: String(r.id),
    name: String(r.name),
    description: optStr(r.description) || undefined,
    permissions: byRole.get(String(r.id)) ?? [],
  }));
}

/** The role of this workspace whose id or name is `ref`, with its permissions; an id match wins. */
export async function findRole(db: Queryable, workspaceId: string, ref: string): Promise<RoleRow | undefined> {
  const found = await rows(db, `SELECT ${ROLE_COLUMNS} FROM roles WHERE workspace_id = ? AND (id = ? OR name = ?)`, [workspaceId, ref, ref]);
  const row = exactly(found, "name", ref);
  return row ? (await withPermissions(db, [row]))[0] : undefined;
}

export async function listRolesPage(db: Queryable, q: PageQuery): Promise<Page<RoleRow>> {
  const p = await page(db, "roles", ROLE_COLUMNS, ["id", "name", "description"], q);
  return { items: await withPermissions(db, p.rows), next: p.next };
}

/**
 * Deletes the role with its role-permission and key-role rows. Run it in a
 * transaction. False when it was already gone.
 */
export async function deleteRoleRow(db: Queryable, workspaceId: string, roleId: string): Promise<boolean> {
  const r = await exec(db, "DELETE FROM roles WHERE id = ? AND workspace_id = ?", [roleId, workspaceId]);
  if (r.affectedRows === 0) return false;
  await exec(db, "DELETE FROM roles_permissions WHERE role_id = ?", [roleId]);
  await exec(db, "DELETE FROM keys_roles WHERE role_id = ?", [roleId]);
  return true;
}
