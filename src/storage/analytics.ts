// The analytics store (migrations/0009_analytics.sql): raw verification and
// rate-limit events and their roll-ups per minute, hour, day and month. Written
// only by the recorder (src/domain/analytics/recorder.ts), a batch at a time:
// the raw rows and the roll-ups' increments commit together, in one round trip,
// so a roll-up never counts an event its raw table lacks (or the reverse).
import { createHash } from "node:crypto";
import { commitInOneTrip, exec, type Pool, type Queryable, rows, type Statement } from "./sql.js";

/** One verification, as recorded. */
export interface VerificationEvent {
  requestId: string;
  /** Unix ms. */
  time: number;
  workspaceId: string;
  /** The API's key space; "" when no key was found. */
  keySpaceId: string;
  /** The API (keyhold's own column beside the key space); "" when no key was found. */
  apiId: string;
  keyId: string;
  identityId: string;
  externalId: string;
  outcome: string;
  region: string;
  tags: readonly string[];
  spentCredits: number;
}

/** One rate-limit check of ratelimit.limit / multiLimit. */
export interface RatelimitEvent {
  requestId: string;
  time: number;
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  passed: boolean;
}

export const ROLLUPS = ["minute", "hour", "day", "month"] as const;
export type Rollup = (typeof ROLLUPS)[number];

/** The start of t's bucket, Unix ms, in UTC. */
export function bucketStart(t: number, g: Rollup): number {
  switch (g) {
    case "minute":
      return t - (t % 60_000);
    case "hour":
      return t - (t % 3_600_000);
    case "day":
      return t - (t % 86_400_000);
    case "month": {
      const d = new Date(t);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** "2026-11-26 13:45:12.345": DATETIME text in UTC (sent as text, so no driver time-zone conversion applies). */
export function sqlTime(t: number, millis = true): string {
  const iso = new Date(t).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, millis ? 23 : 19)}`;
}

const tagsText = (tags: readonly string[]): string => JSON.stringify(tags);

/**
 * The statements that write one batch: raw rows, then each roll-up's
 * increments. Roll-up rows are sorted by primary key so that instances
 * flushing the same buckets lock them in the same order.
 */
export function analyticsBatch(verifications: readonly VerificationEvent[], ratelimits: readonly RatelimitEvent[]): Statement[] {
  const out: Statement[] = [];
  if (verifications.length > 0) {
    out.push({
      sql: `INSERT INTO analytics_verifications (request_id, \`time\`, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, region, tags, spent_credits) VALUES ${verifications
        .map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .join(", ")}`,
      params: verifications.flatMap((e) => [
        e.requestId,
        sqlTime(e.time),
        e.workspaceId,
        e.keySpaceId,
        e.apiId,
        e.keyId,
        e.identityId,
        e.externalId,
        e.outcome,
        e.region,
        tagsText(e.tags),
        e.spentCredits,
      ]),
    });
    for (const g of ROLLUPS) out.push(verificationRollup(verifications, g));
  }
  if (ratelimits.length > 0) {
    out.push({
      sql: `INSERT INTO analytics_ratelimits (request_id, \`time\`, workspace_id, namespace_id, identifier, passed) VALUES ${ratelimits
        .map(() => "(?, ?, ?, ?, ?, ?)")
        .join(", ")}`,
      params: ratelimits.flatMap((e) => [e.requestId, sqlTime(e.time), e.workspaceId, e.namespaceId, e.identifier, e.passed ? 1 : 0]),
    });
    for (const g of ROLLUPS) out.push(ratelimitRollup(ratelimits, g));
  }
  return out;
}

interface VerificationSum {
  time: string;
  e: VerificationEvent;
  tags: string;
  tagsHash: string;
  count: number;
  spent: number;
}

function verificationRollup(events: readonly VerificationEvent[], g: Rollup): Statement {
  const sums = new Map<string, VerificationSum>();
  const hashes = new Map<string, string>();
  for (const e of events) {
    const tags = tagsText(e.tags);
    let tagsHash = hashes.get(tags);
    if (tagsHash === undefined) {
      tagsHash = createHash("md5").update(tags).digest("hex");
      hashes.set(tags, tagsHash);
    }
    const time = sqlTime(bucketStart(e.time, g), false);
    const id = [e.workspaceId, e.keySpaceId, time, e.keyId, e.identityId, e.outcome, tagsHash].join("\u0000");
    const sum = sums.get(id);
    if (sum === undefined) sums.set(id, { time, e, tags, tagsHash, count: 1, spent: e.spentCredits });
    else {
      sum.count++;
      sum.spent += e.spentCredits;
    }
  }
  const rows = [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
  return {
    // VALUES(x) rather than MySQL 8's row alias: MariaDB has no row alias.
    sql: `INSERT INTO analytics_verifications_per_${g} (\`time\`, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, tags, tags_hash, count, spent_credits) VALUES ${rows
      .map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .join(", ")} ON DUPLICATE KEY UPDATE count = count + VALUES(count), spent_credits = spent_credits + VALUES(spent_credits)`,
    params: rows.flatMap((s) => [
      s.time,
      s.e.workspaceId,
      s.e.keySpaceId,
      s.e.apiId,
      s.e.keyId,
      s.e.identityId,
      s.e.externalId,
      s.e.outcome,
      s.tags,
      s.tagsHash,
      s.count,
      s.spent,
    ]),
  };
}

function ratelimitRollup(events: readonly RatelimitEvent[], g: Rollup): Statement {
  const sums = new Map<string, { time: string; e: RatelimitEvent; passed: number; total: number }>();
  for (const e of events) {
    const time = sqlTime(bucketStart(e.time, g), false);
    const id = [e.workspaceId, e.namespaceId, time, e.identifier].join("\u0000");
    const sum = sums.get(id);
    if (sum === undefined) sums.set(id, { time, e, passed: e.passed ? 1 : 0, total: 1 });
    else {
      sum.total++;
      if (e.passed) sum.passed++;
    }
  }
  const rows = [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
  return {
    sql: `INSERT INTO analytics_ratelimits_per_${g} (\`time\`, workspace_id, namespace_id, identifier, passed, total) VALUES ${rows
      .map(() => "(?, ?, ?, ?, ?, ?)")
      .join(", ")} ON DUPLICATE KEY UPDATE passed = passed + VALUES(passed), total = total + VALUES(total)`,
    params: rows.flatMap((s) => [s.time, s.e.workspaceId, s.e.namespaceId, s.e.identifier, s.passed, s.total]),
  };
}

/** Writes one batch, raw rows and roll-ups, in one transaction and one round trip. */
export async function writeAnalytics(pool: Pool, verifications: readonly VerificationEvent[], ratelimits: readonly RatelimitEvent[]): Promise<void> {
  const statements = analyticsBatch(verifications, ratelimits);
  if (statements.length > 0) await commitInOneTrip(pool, statements);
}

export const RAW_TABLES = ["analytics_verifications", "analytics_ratelimits"] as const;

/**
 * Deletes up to `batch` raw rows of `table` older than `before` (Unix ms); the
 * roll-ups stay (they are what long ranges read). Returns the rows deleted.
 */
export async function deleteRawAnalyticsBefore(db: Queryable, table: (typeof RAW_TABLES)[number], before: number, batch: number): Promise<number> {
  const r = await exec(db, `DELETE FROM ${table} WHERE \`time\` < ? ORDER BY \`time\` LIMIT ${Math.floor(batch)}`, [sqlTime(before)]);
  return r.affectedRows;
}

/** Why a user's query failed at the database. */
export type QueryFailure = "timeout" | "invalid" | "unavailable";

export class AnalyticsQueryFailed extends Error {
  constructor(
    readonly failure: QueryFailure,
    message: string,
  ) {
    super(message);
  }
}

// MariaDB limits a statement by max_statement_time (seconds), MySQL 8 by
// max_execution_time (milliseconds, SELECTs only): whichever this server knows.
let timeLimitVariable: "max_statement_time" | "max_execution_time" | undefined;
const TIMEOUT_ERRNOS = new Set([1969 /* MariaDB ER_STATEMENT_TIMEOUT */, 3024 /* MySQL ER_QUERY_TIMEOUT */]);
const UNKNOWN_VARIABLE = 1193;

/**
 * Runs one compiled analytics query on the read-only pool, limited in time; at
 * most maxRows + 1 rows come back (the compiler caps them). Database errors are
 * sorted into the caller's fault (a query the server refuses), a timeout, and
 * the database being unreachable.
 */
export async function runAnalyticsQuery(pool: Pool, sql: string, timeoutMs: number): Promise<Record<string, unknown>[]> {
  let conn: Awaited<ReturnType<Pool["getConnection"]>>;
  try {
    conn = await pool.getConnection();
  } catch (err) {
    throw new AnalyticsQueryFailed("unavailable", (err as Error).message);
  }
  try {
    await setTimeLimit(conn, timeoutMs);
    // And a deadline of the client's own, for a server that stops answering at all
    // (mysql2 then closes the connection): the query cannot hold one of the 4 forever.
    const [rows] = await conn.query({ sql, rowsAsArray: false, timeout: timeoutMs + 5_000 });
    return rows as Record<string, unknown>[];
  } catch (err) {
    const e = err as { errno?: number; sqlMessage?: string; fatal?: boolean; message: string };
    if (
      (e.errno !== undefined && TIMEOUT_ERRNOS.has(e.errno)) ||
      /max(imum)?[ _]statement[ _]time|max_execution_time|maximum statement execution time/i.test(e.message)
    )
      throw new AnalyticsQueryFailed("timeout", "the query ran longer than allowed");
    if ((e as { code?: string }).code === "PROTOCOL_SEQUENCE_TIMEOUT") throw new AnalyticsQueryFailed("unavailable", "the database did not answer in time");
    if (e.fatal === true || e.errno === undefined) throw new AnalyticsQueryFailed("unavailable", e.message);
    throw new AnalyticsQueryFailed("invalid", e.sqlMessage ?? e.message);
  } finally {
    conn.release();
  }
}

async function setTimeLimit(conn: Awaited<ReturnType<Pool["getConnection"]>>, timeoutMs: number): Promise<void> {
  for (const variable of timeLimitVariable === undefined ? (["max_statement_time", "max_execution_time"] as const) : [timeLimitVariable]) {
    const value = variable === "max_statement_time" ? timeoutMs / 1000 : Math.ceil(timeoutMs);
    try {
      await conn.query(`SET SESSION ${variable} = ${Number(value)}`);
      timeLimitVariable = variable;
      return;
    } catch (err) {
      if ((err as { errno?: number }).errno !== UNKNOWN_VARIABLE) throw err;
    }
  }
  throw new Error("the database limits statements by neither max_statement_time nor max_execution_time");
}

/** Every API of the workspace (deleted ones too: their events stay) with its key space. */
export async function keySpacesOf(db: Queryable, workspaceId: string): Promise<Array<{ apiId: string; keySpaceId: string }>> {
  const rs = await rows(db, "SELECT id, key_auth_id FROM apis WHERE workspace_id = ?", [workspaceId]);
  return rs.map((r) => ({ apiId: String(r.id), keySpaceId: String(r.key_auth_id) }));
}

/** Every rate-limit namespace id of the workspace, deleted ones too. */
export async function namespaceIdsOf(db: Queryable, workspaceId: string): Promise<string[]> {
  const rs = await rows(db, "SELECT id FROM ratelimit_namespaces WHERE workspace_id = ?", [workspaceId]);
  return rs.map((r) => String(r.id));
}
