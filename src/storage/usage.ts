// The verification_usage table (migrations/0005_verification_usage.sql): per-minute
// verification counts that earlier versions wrote for the usage charts. Nothing
// writes or reads it any more: the charts and the analytics API read the
// analytics roll-ups (analytics-usage.ts, analytics.ts), one store, so the two
// cannot disagree. Its rows still go through USAGE_RETENTION_DAYS, so an upgraded
// database empties it by itself; the table can be dropped by a later migration.
import { exec, type Queryable } from "./sql.js";

/**
 * Deletes the rows of minutes that started before `before`, `batch` rows per
 * statement (short row locks, small undo) until none are left; returns how many.
 */
export async function sweepVerificationUsage(db: Queryable, before: number, batch = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const res = await exec(db, `DELETE FROM verification_usage WHERE bucket_start_m < ? LIMIT ${batch}`, [before]);
    total += res.affectedRows;
    if (res.affectedRows < batch) return total;
    await new Promise((r) => setImmediate(r));
  }
}
