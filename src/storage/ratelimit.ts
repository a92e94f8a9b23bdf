// Rate-limit namespaces and their per-identifier overrides.
import { exec, isDuplicateKey, num, optNum, type Queryable, type Row, rows } from "./sql.js";

export interface NamespaceRow {
  id: string;
  workspaceId: string;
  name: string;
  /** Set when the namespace was soft-deleted. */
  deletedAt: number | undefined;
}

export interface OverrideRow {
  id: string;
  namespaceId: string;
  identifier: string;
  limit: number;
  duration: number;
  createdAt: number;
}

const toNamespace = (r: Row): NamespaceRow => ({
  id: String(r.id),
  workspaceId: String(r.workspace_id),
  name: String(r.name),
  deletedAt: optNum(r.deleted_at_m),
});

const toOverride = (r: Row): OverrideRow => ({
  id: String(r.id),
  namespaceId: String(r.namespace_id),
  identifier: String(r.identifier),
  limit: num(r.limit),
  duration: num(r.duration),
  createdAt: num(r.created_at_m),
});

const OVERRIDE_COLUMNS = "id, namespace_id, identifier, `limit`, duration, created_at_m";

/**
 * The workspace's namespace whose id or name is `ref`, deleted ones included (the
 * caller decides between 404 and 410). An id match wins over a name match.
 */
export async function findNamespace(db: Queryable, workspaceId: string, ref: string): Promise<NamespaceRow | undefined> {
  const found = await rows(db, "SELECT id, workspace_id, name, deleted_at_m FROM ratelimit_namespaces WHERE workspace_id = ? AND (id = ? OR name = ?)", [
    workspaceId,
    ref,
    ref,
  ]);
  // The _bin collation ignores trailing spaces, so SQL may also return a name
  // equal to `ref` up to them; the unique index treats those as the same name too.
  const row = found.find((r) => String(r.id) === ref) ?? found.find((r) => String(r.name) === ref) ?? found[0];
  return row ? toNamespace(row) : undefined;
}

/** Creates the namespace; when a concurrent request created it first, returns that one. */
export async function insertNamespace(db: Queryable, n: { id: string; workspaceId: string; name: string; now: number }): Promise<NamespaceRow> {
  try {
    await exec(db, "INSERT INTO ratelimit_namespaces (id, workspace_id, name, created_at_m) VALUES (?, ?, ?, ?)", [n.id, n.workspaceId, n.name, n.now]);
    return { id: n.id, workspaceId: n.workspaceId, name: n.name, deletedAt: undefined };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const again = await findNamespace(db, n.workspaceId, n.name);
    if (!again) throw err;
    return again;
  }
}

/**
 * The live overrides that could apply to `identifier`: its exact row and every
 * pattern containing `*` (the caller picks the best match).
 */
export async function findOverrideCandidates(db: Queryable, namespaceId: string, identifier: string): Promise<OverrideRow[]> {
  const rs = await rows(
    db,
    `SELECT ${OVERRIDE_COLUMNS} FROM ratelimit_overrides
      WHERE namespace_id = ? AND deleted_at_m IS NULL AND (identifier = ? OR identifier LIKE '%*%')`,
    [namespaceId, identifier],
  );
  return rs.map(toOverride);
}

/** The live override whose identifier is exactly `identifier`. */
export async function findLiveOverride(db: Queryable, namespaceId: string, identifier: string): Promise<OverrideRow | undefined> {
  const rs = await rows(db, `SELECT ${OVERRIDE_COLUMNS} FROM ratelimit_overrides WHERE namespace_id = ? AND identifier = ? AND deleted_at_m IS NULL`, [
    namespaceId,
    identifier,
  ]);
  // Equal up to trailing spaces counts as the same identifier, as in the unique index.
  const r = rs.find((x) => String(x.identifier) === identifier) ?? rs[0];
  return r ? toOverride(r) : undefined;
}

/**
 * Creates or updates the override of (namespace, identifier). A re-set keeps the
 * row and so its id, and revives a soft-deleted override (Unkey leaves it deleted).
 * `created` is true when the row is new (it then has the id passed in).
 */
export async function upsertOverride(
  db: Queryable,
  o: { id: string; workspaceId: string; namespaceId: string; identifier: string; limit: number; duration: number; now: number },
): Promise<{ id: string; created: boolean }> {
  await exec(
    db,
    `INSERT INTO ratelimit_overrides (id, workspace_id, namespace_id, identifier, \`limit\`, duration, created_at_m)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON DUPLICATE KEY UPDATE \`limit\` = ?, duration = ?, updated_at_m = ?, deleted_at_m = NULL`,
    [o.id, o.workspaceId, o.namespaceId, o.identifier, o.limit, o.duration, o.now, o.limit, o.duration, o.now],
  );
  const rs = await rows(db, "SELECT id, identifier FROM ratelimit_overrides WHERE namespace_id = ? AND identifier = ?", [o.namespaceId, o.identifier]);
  const r = rs.find((x) => String(x.identifier) === o.identifier) ?? rs[0];
  const id = r ? String(r.id) : o.id;
  return { id, created: id === o.id };
}

/** One page of a namespace's live overrides in id order; limit+1 rows tell whether more exist. */
export async function listLiveOverrides(
  db: Queryable,
  q: { namespaceId: string; limit: number; cursor: string | undefined },
): Promise<{ overrides: OverrideRow[]; next: string | undefined }> {
  const params: string[] = [q.namespaceId];
  let cursor = "";
  if (q.cursor !== undefined) {
    cursor = " AND id >= ?";
    params.push(q.cursor);
  }
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const rs = await rows(
    db,
    `SELECT ${OVERRIDE_COLUMNS} FROM ratelimit_overrides WHERE namespace_id = ? AND deleted_at_m IS NULL${cursor} ORDER BY id LIMIT ${q.limit + 1}`,
    params,
  );
  const next = rs.length > q.limit ? String(rs[q.limit]?.id) : undefined;
  return { overrides: rs.slice(0, q.limit).map(toOverride), next };
}

/** Soft delete; false when it was not live (already deleted, or a concurrent delete). */
export async function softDeleteOverride(db: Queryable, overrideId: string, now: number): Promise<boolean> {
  const r = await exec(db, "UPDATE ratelimit_overrides SET deleted_at_m = ? WHERE id = ? AND deleted_at_m IS NULL", [now, overrideId]);
  return r.affectedRows === 1;
}
