// The cross-instance invalidation log (`cache_invalidations`): one row per change
// that other instances must evict from their caches (see cache/invalidation.ts).
import { exec, type Queryable, rows } from "./sql.js";

export interface InvalidationRow {
  pk: number;
  kind: string;
  cacheKey: string;
}

export async function insertInvalidation(db: Queryable, kind: string, cacheKey: string, at: number): Promise<void> {
  await exec(db, "INSERT INTO cache_invalidations (kind, cache_key, created_at_m) VALUES (?, ?, ?)", [kind, cacheKey, at]);
}

export async function lastInvalidationPk(db: Queryable): Promise<number> {
  const r = await rows<{ m: number | null }>(db, "SELECT MAX(pk) AS m FROM cache_invalidations");
  return Number(r[0]?.m ?? 0);
}

/** Rows after `afterPk`, and every row written since `since` again (see the caller for why), oldest first. */
export async function listInvalidations(db: Queryable, afterPk: number, since: number, limit: number): Promise<InvalidationRow[]> {
  const rs = await rows(db, `SELECT pk, kind, cache_key FROM cache_invalidations WHERE pk > ? OR created_at_m >= ? ORDER BY pk LIMIT ${limit}`, [
    afterPk,
    since,
  ]);
  return rs.map((r) => ({ pk: Number(r.pk), kind: String(r.kind), cacheKey: String(r.cache_key) }));
}

export async function deleteInvalidationsBefore(db: Queryable, before: number): Promise<void> {
  await exec(db, "DELETE FROM cache_invalidations WHERE created_at_m < ?", [before]);
}
