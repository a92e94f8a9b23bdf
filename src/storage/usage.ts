// Verification counts per (workspace, API, key, minute, outcome), written behind
// by VerificationCounts (src/domain/keys/verification-counts.ts) and read for the usage charts.
// See migrations/0005_verification_usage.sql.
import { exec, type Queryable, retryingDeadlocks, rows } from "./sql.js";

/** One row of verification counts: a minute of one outcome of one key (or of an API's or workspace's total). */
export interface UsageCount {
  workspaceId: string;
  /** "" for NOT_FOUND, which has no API. */
  apiId: string;
  /** "" on an API's total and on NOT_FOUND. */
  keyId: string;
  /** Start of the minute, unix ms. */
  bucketStart: number;
  outcome: string;
  count: number;
}

export type UsageGranularity = "minute" | "hour" | "day";

export interface UsagePoint {
  /** Start of the bucket, unix ms, aligned to the granularity in UTC. */
  time: number;
  outcome: string;
  count: number;
}

export const GRANULARITY_MS: Record<UsageGranularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Most buckets one query may span: a day of minutes, two months of hours, four years of days. */
export const MAX_USAGE_BUCKETS = 1_440;

/**
 * Adds the rows' counts to the stored ones in one statement. Rows are sorted in
 * primary-key order so that instances flushing the same rows lock them in the
 * same order (no deadlocks between them).
 */
export async function addVerificationCounts(db: Queryable, counts: UsageCount[]): Promise<void> {
  if (counts.length === 0) return;
  const sorted = [...counts].sort(byPrimaryKey);
  const params = sorted.flatMap((c) => [c.workspaceId, c.apiId, c.keyId, c.bucketStart, c.outcome, c.count]);
  await retryingDeadlocks(() =>
    exec(
      db,
      // VALUES(count) rather than MySQL 8's row alias: MariaDB has no row alias.
      `INSERT INTO verification_usage (workspace_id, api_id, key_id, bucket_start_m, outcome, count) VALUES ${sorted
        .map(() => "(?, ?, ?, ?, ?, ?)")
        .join(", ")} ON DUPLICATE KEY UPDATE count = count + VALUES(count)`,
      params,
    ),
  );
}

function byPrimaryKey(a: UsageCount, b: UsageCount): number {
  return cmp(a.workspaceId, b.workspaceId) || cmp(a.apiId, b.apiId) || cmp(a.keyId, b.keyId) || a.bucketStart - b.bucketStart || cmp(a.outcome, b.outcome);
}

// Binary comparison, as the utf8mb4_bin columns compare.
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Verifications over time by outcome, summed per bucket of the granularity:
 * of one key (keyId), of one API (apiId: its total), or of the whole workspace
 * (neither; NOT_FOUND included). Always within the workspace. `from` and `to`
 * (unix ms, `to` exclusive) are widened to whole buckets; buckets without
 * verifications are left out. Points are sorted by time, then outcome.
 * The range is checked by the caller (domain/keys/usage-query.ts).
 */
export async function readUsage(
  db: Queryable,
  q: { workspaceId: string; apiId?: string | undefined; keyId?: string | undefined; from: number; to: number; granularity: UsageGranularity },
): Promise<UsagePoint[]> {
  const gran = GRANULARITY_MS[q.granularity];
  const from = Math.floor(q.from / gran) * gran;
  const to = Math.ceil(q.to / gran) * gran;
  const where = ["workspace_id = ?"];
  const params: Array<string | number> = [q.workspaceId];
  if (q.apiId !== undefined) {
    where.push("api_id = ?");
    params.push(q.apiId);
  }
  // The key's own rows, or the totals (of the API, or of the workspace).
  where.push("key_id = ?");
  params.push(q.keyId ?? "");
  where.push("bucket_start_m >= ?", "bucket_start_m < ?");
  params.push(from, to);
  // gran is one of three constants, never the caller's text.
  const found = await rows(
    db,
    `SELECT (bucket_start_m DIV ${gran}) * ${gran} AS t, outcome, SUM(count) AS n FROM verification_usage WHERE ${where.join(" AND ")} GROUP BY t, outcome ORDER BY t, outcome`,
    params,
  );
  return found.map((r) => ({ time: Number(r.t), outcome: String(r.outcome), count: Number(r.n) }));
}

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
