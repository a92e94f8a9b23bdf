// Identities and their rate-limit configs. `deleted` is 0 for a live identity and
// the deletion time otherwise: the unique index (workspace_id, external_id,
// deleted) keeps an externalId unique among live identities and frees it on delete.
import type { IdentityRecord, RatelimitConfig } from "../core/records.js";
import { toLimit } from "./keys.js";
import { exec, groupBy, isDuplicateKey, num, optStr, placeholders, type Queryable, type Row, rows } from "./sql.js";

export interface IdentityRow extends IdentityRecord {
  workspaceId: string;
  createdAt: number;
  updatedAt: number | undefined;
}

const COLUMNS = "id, workspace_id, external_id, meta, created_at_m, updated_at_m";

function parseMeta(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  const meta = JSON.parse(text) as Record<string, unknown>;
  return Object.keys(meta).length > 0 ? meta : undefined;
}

async function withRatelimits(db: Queryable, base: Row[]): Promise<IdentityRow[]> {
  if (base.length === 0) return [];
  const ids = base.map((r) => String(r.id));
  const limitRows = await rows(
    db,
    `SELECT id, identity_id, name, \`limit\`, duration, auto_apply FROM ratelimits WHERE identity_id IN (${placeholders(ids.length)}) ORDER BY name`,
    ids,
  );
  const byIdentity = groupBy(limitRows, "identity_id", toLimit);
  return base.map((r) => ({
    id: String(r.id),
    workspaceId: String(r.workspace_id),
    externalId: String(r.external_id),
    meta: parseMeta(optStr(r.meta)),
    ratelimits: byIdentity.get(String(r.id)) ?? [],
    createdAt: num(r.created_at_m),
    updatedAt: r.updated_at_m === null ? undefined : num(r.updated_at_m),
  }));
}

/** Thrown by insertIdentity when a live identity already has the externalId. */
export class DuplicateExternalId extends Error {}

export async function insertIdentity(db: Queryable, i: { id: string; workspaceId: string; externalId: string; meta: string; now: number }): Promise<void> {
  try {
    await exec(db, "INSERT INTO identities (id, workspace_id, external_id, meta, deleted, created_at_m) VALUES (?, ?, ?, ?, 0, ?)", [
      i.id,
      i.workspaceId,
      i.externalId,
      i.meta,
      i.now,
    ]);
  } catch (err) {
    if (isDuplicateKey(err) && String((err as Error).message).includes("identities_external")) throw new DuplicateExternalId();
    throw err;
  }
}

/**
 * The live identity of this workspace whose id or externalId is `ref`. An id
 * match wins over an externalId match (an externalId may look like an id).
 * `lock` takes a row lock for the rest of the caller's transaction.
 */
export async function findLiveIdentity(db: Queryable, workspaceId: string, ref: string, lock = false): Promise<IdentityRow | undefined> {
  const found = await rows(
    db,
    `SELECT ${COLUMNS} FROM identities
      WHERE workspace_id = ? AND deleted = 0 AND (id = ? OR external_id = ?)
      ${lock ? "FOR UPDATE" : ""}`,
    [workspaceId, ref, ref],
  );
  const row = found.find((r) => String(r.id) === ref) ?? found.find((r) => String(r.external_id) === ref) ?? found[0];
  if (!row) return undefined;
  return (await withRatelimits(db, [row]))[0];
}

/**
 * `%` and `_` are literal in a search term. The escape character is `!`, named
 * explicitly: the default `\` stops being one under NO_BACKSLASH_ESCAPES.
 */
const likeLiteral = (s: string): string => s.replace(/[!%_]/g, (c) => `!${c}`);

/** One page of live identities in id order; limit+1 rows tell whether more exist. */
export async function listLiveIdentities(
  db: Queryable,
  q: { workspaceId: string; limit: number; cursor: string | undefined; search: string | undefined },
): Promise<{ identities: IdentityRow[]; next: string | undefined }> {
  const where = ["workspace_id = ?", "deleted = 0"];
  const params: string[] = [q.workspaceId];
  if (q.cursor !== undefined) {
    where.push("id >= ?");
    params.push(q.cursor);
  }
  if (q.search !== undefined && q.search !== "") {
    const term = `%${likeLiteral(q.search.toLowerCase())}%`;
    where.push("(LOWER(id) LIKE ? ESCAPE '!' OR LOWER(external_id) LIKE ? ESCAPE '!')");
    params.push(term, term);
  }
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const rs = await rows(db, `SELECT ${COLUMNS} FROM identities WHERE ${where.join(" AND ")} ORDER BY id LIMIT ${q.limit + 1}`, params);
  const next = rs.length > q.limit ? String(rs[q.limit]?.id) : undefined;
  return { identities: await withRatelimits(db, rs.slice(0, q.limit)), next };
}

export async function updateIdentityMeta(db: Queryable, identityId: string, meta: string, now: number): Promise<void> {
  await exec(db, "UPDATE identities SET meta = ?, updated_at_m = ? WHERE id = ?", [meta, now, identityId]);
}

export async function touchIdentity(db: Queryable, identityId: string, now: number): Promise<void> {
  await exec(db, "UPDATE identities SET updated_at_m = ? WHERE id = ?", [now, identityId]);
}

/**
 * Replaces the identity's limits by name: a name that already exists is updated
 * in place and keeps its id, a new name is inserted, a name not in `next` is removed.
 */
export async function replaceIdentityRatelimits(
  db: Queryable,
  owner: { workspaceId: string; identityId: string },
  current: readonly RatelimitConfig[],
  next: readonly RatelimitConfig[],
  now: number,
): Promise<void> {
  const existing = new Map(current.map((l) => [l.name, l]));
  const keep = new Set(next.map((l) => l.name));
  const gone = current.filter((l) => !keep.has(l.name)).map((l) => l.id);
  if (gone.length > 0) await exec(db, `DELETE FROM ratelimits WHERE id IN (${placeholders(gone.length)})`, gone);
  for (const l of next) {
    const old = existing.get(l.name);
    if (old) {
      await exec(db, "UPDATE ratelimits SET `limit` = ?, duration = ?, auto_apply = ?, updated_at_m = ? WHERE id = ?", [
        l.limit,
        l.duration,
        l.autoApply,
        now,
        old.id,
      ]);
    } else {
      await exec(
        db,
        "INSERT INTO ratelimits (id, workspace_id, name, key_id, identity_id, `limit`, duration, auto_apply, created_at_m) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?)",
        [l.id, owner.workspaceId, l.name, owner.identityId, l.limit, l.duration, l.autoApply, now],
      );
    }
  }
}

/**
 * Soft delete: `deleted` becomes the deletion time. Should another identity with
 * the same externalId have been deleted in the very same millisecond, the next
 * free value is used. False when the identity was no longer live.
 */
export async function softDeleteIdentity(db: Queryable, identityId: string, now: number): Promise<boolean> {
  for (let stamp = Math.max(1, now); ; stamp++) {
    try {
      const r = await exec(db, "UPDATE identities SET deleted = ?, updated_at_m = ? WHERE id = ? AND deleted = 0", [stamp, now, identityId]);
      return r.affectedRows === 1;
    } catch (err) {
      if (!isDuplicateKey(err) || stamp - now > 100) throw err;
    }
  }
}
