// The dashboard's usage charts (DashboardService.GetUsage), read from the
// analytics roll-ups of migrations/0009_analytics.sql: the same counts the
// analytics API answers from, so the charts and analytics.getVerifications
// cannot disagree. The roll-ups are written by the analytics recorder; this
// module only reads them.
import { type Queryable, rows } from "./sql.js";

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

// Each granularity has a roll-up whose buckets are exactly that wide, so a
// bucket's row is read as it is, never summed across widths. Table names are
// these constants, never the caller's text.
const ROLLUP: Record<UsageGranularity, string> = {
  minute: "analytics_verifications_per_minute",
  hour: "analytics_verifications_per_hour",
  day: "analytics_verifications_per_day",
};

/**
 * Verifications over time by outcome, summed per bucket of the granularity: of
 * one key (keyId), of one API (keySpaceId: every row of its key space), or of the
 * whole workspace (neither: every row, NOT_FOUND included). Always within the
 * workspace. `from` and `to` (unix ms, `to` exclusive) are widened to whole
 * buckets; buckets without verifications are left out. Points are sorted by
 * time, then outcome. The range is checked by the caller (domain/keys/usage-query.ts).
 */
export async function readUsage(
  db: Queryable,
  q: { workspaceId: string; keySpaceId?: string | undefined; keyId?: string | undefined; from: number; to: number; granularity: UsageGranularity },
): Promise<UsagePoint[]> {
  const gran = GRANULARITY_MS[q.granularity];
  const from = Math.floor(q.from / gran) * gran;
  const to = Math.ceil(q.to / gran) * gran;
  // The caller checks for whole unix ms, not for times a DATETIME holds: a range
  // that starts past them has nothing counted in it, and one that ends past them
  // has no end to write (and needs none).
  if (from >= DATETIME_END) return [];
  const table = ROLLUP[q.granularity];
  const fromText = utcDatetime(from);
  const toText = to < DATETIME_END ? utcDatetime(to) : undefined;
  // The roll-ups have no index but their primary key (workspace, key space, time,
  // ...; migrations/0013): each key space's buckets in the range are one range
  // of it. Without an API, the workspace's key spaces with a bucket in the range
  // are found first, by jumping from group to group of the primary key ('' among
  // them: NOT_FOUND rows), rather than reading every row the workspace ever had.
  const spaces = q.keySpaceId !== undefined ? [q.keySpaceId] : await keySpacesWithin(db, table, q.workspaceId, fromText, toText);
  const sums = new Map<string, UsagePoint>();
  for (let i = 0; i < spaces.length; i += SPACES_A_STATEMENT) {
    const chunk = spaces.slice(i, i + SPACES_A_STATEMENT);
    const where = ["workspace_id = ?", `key_space_id IN (${chunk.map(() => "?").join(", ")})`];
    const params: string[] = [q.workspaceId, ...chunk];
    // '' is the key of NOT_FOUND rows: an empty id asks for no key, not for those.
    if (q.keyId !== undefined && q.keyId !== "") {
      // By id alone, not through the key's key space: a key deleted for good has
      // no row left to look its key space up in, and its history still counts.
      where.push("key_id = ?");
      params.push(q.keyId);
    }
    where.push("`time` >= ?");
    params.push(fromText);
    if (toText !== undefined) {
      where.push("`time` < ?");
      params.push(toText);
    }
    // `time` is a DATETIME in UTC: its distance from the epoch, counted by the
    // server, is the bucket's start whatever the session's or the driver's time zone.
    const found = await rows(
      db,
      `SELECT TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', \`time\`) AS t, outcome, SUM(count) AS n
         FROM ${table}
        WHERE ${where.join(" AND ")}
        GROUP BY \`time\`, outcome`,
      params,
    );
    for (const r of found) {
      const point = { time: Number(r.t) * 1000, outcome: String(r.outcome), count: Number(r.n) };
      const id = `${point.time} ${point.outcome}`;
      const seen = sums.get(id);
      if (seen === undefined) sums.set(id, point);
      else seen.count += point.count;
    }
  }
  return [...sums.values()].sort((a, b) => a.time - b.time || (a.outcome < b.outcome ? -1 : a.outcome > b.outcome ? 1 : 0));
}

/** At most this many key spaces in one statement's IN list; a workspace with more is read in several. */
const SPACES_A_STATEMENT = 500;

/**
 * The workspace's key spaces with a bucket in [from, to) in `table`. MIN and MAX
 * of `time` per (workspace, key space), the leading columns of the primary key,
 * are read by a loose index scan (one look-up per group, not per row).
 */
async function keySpacesWithin(db: Queryable, table: string, workspaceId: string, from: string, to: string | undefined): Promise<string[]> {
  const params = [workspaceId, from, ...(to === undefined ? [] : [to])];
  const found = await rows(
    db,
    `SELECT key_space_id FROM ${table} WHERE workspace_id = ?
      GROUP BY workspace_id, key_space_id
     HAVING MAX(\`time\`) >= ?${to === undefined ? "" : " AND MIN(`time`) < ?"}`,
    params,
  );
  return found.map((r) => String(r.key_space_id));
}

/** 10000-01-01 UTC: the first instant past the DATETIME range (and past what toISOString writes as four digits). */
const DATETIME_END = Date.UTC(10_000, 0, 1);

/** `YYYY-MM-DD HH:MM:SS` in UTC: a DATETIME literal compared as one, so the range is one of the primary key (whose third column is `time`). */
const utcDatetime = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace("T", " ");

/**
 * The key space of one of the workspace's APIs (deleted ones too: they keep
 * their history), from the main database; undefined for an id the workspace
 * does not have. Asked apart from the roll-ups, which may live elsewhere
 * (ANALYTICS_DATABASE_URL).
 */
export async function keySpaceOfApi(db: Queryable, workspaceId: string, apiId: string): Promise<string | undefined> {
  const [r] = await rows(db, "SELECT key_auth_id FROM apis WHERE id = ? AND workspace_id = ?", [apiId, workspaceId]);
  return r === undefined ? undefined : String(r.key_auth_id);
}
