// The audit log's rows (migration 0008). Records are written only inside the
// transaction of the change they describe (domain/audit/audit.ts); reading is
// newest first by (time_m, pk), with an opaque cursor naming the last row seen.
import { exec, num, optStr, placeholders, type Queryable, rows, type Statement } from "./sql.js";

export interface AuditResource {
  type: string;
  id: string;
}

export interface AuditRow {
  id: string;
  workspaceId: string | undefined;
  time: number;
  actorType: string;
  actorId: string;
  action: string;
  resources: AuditResource[];
  description: string;
  requestId: string | undefined;
  remoteAddress: string | undefined;
  userAgent: string | undefined;
}

/** Writes one record and its resource index: two statements, on the change's own connection. */
export async function insertAudit(db: Queryable, r: AuditRow): Promise<void> {
  for (const s of auditInserts(r)) await exec(db, s.sql, s.params);
}

/**
 * The record's INSERT and its resource index's, in this order. The index finds
 * each record's pk by its id (a unique index), its rows handed over as one JSON
 * array: with no LAST_INSERT_ID() to read right after each record, a group of
 * changes (commitWithOthers: many createKeys at once) sends one INSERT of every
 * record and one of every index row instead of two statements a change, and the
 * index still follows its records (sql.ts, Statement.rows). Measured on MariaDB
 * 10.11 with `bench:ab` (bench/README.md, createKey): the database's CPU a key
 * ×0.78-0.82 and keys/s ×1.11; a subquery a row instead of the JSON array cost
 * it more than the two statements a key did (×1.13).
 */
export function auditInserts(r: AuditRow): Statement[] {
  const record: Statement = {
    sql: `INSERT INTO audit_logs (id, workspace_id, time_m, actor_type, actor_id, action, resources, description, request_id, remote_address, user_agent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    rows: true,
    params: [
      r.id,
      r.workspaceId ?? null,
      r.time,
      r.actorType,
      r.actorId,
      r.action,
      JSON.stringify(r.resources),
      r.description,
      r.requestId ?? null,
      r.remoteAddress ?? null,
      r.userAgent ?? null,
    ],
  };
  const ids = [...new Set(r.resources.map((x) => x.id))];
  if (ids.length === 0) return [record];
  return [record, { sql: INDEX_ROWS, params: [JSON.stringify(ids.map((id) => [r.id, id]))], jsonRows: true }];
}

/**
 * The index rows of records already written: [record id, resource id] pairs in
 * one JSON array (JSON_TABLE: MariaDB 10.6 and MySQL 8.0.4 on). Its columns are
 * utf8mb4_bin like the tables' (MariaDB would take the connection's collation), so
 * the join finds each record through audit_logs' unique index on id.
 */
const INDEX_ROWS = `INSERT INTO audit_log_resources (audit_pk, workspace_id, resource_id)
     SELECT a.pk, a.workspace_id, j.resource_id
       FROM JSON_TABLE(?, '$[*]' COLUMNS (
              audit_id VARCHAR(48) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',
              resource_id VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[1]')) AS j
       JOIN audit_logs a ON a.id = j.audit_id`;

export interface AuditQuery {
  /** undefined: the events outside any workspace (sign-ins). */
  workspaceId: string | undefined;
  since: number | undefined;
  until: number | undefined;
  actorId: string | undefined;
  actions: readonly string[];
  resourceId: string | undefined;
  limit: number;
  /** The last row of the previous page: older rows only. */
  after: { time: number; pk: number } | undefined;
}

/** One page, newest first; limit+1 rows are read to tell whether more exist. */
export async function listAudit(db: Queryable, q: AuditQuery): Promise<{ rows: AuditRow[]; next: { time: number; pk: number } | undefined }> {
  const where: string[] = [q.workspaceId === undefined ? "a.workspace_id IS NULL" : "a.workspace_id = ?"];
  const params: (string | number)[] = q.workspaceId === undefined ? [] : [q.workspaceId];
  let from = "audit_logs a";
  if (q.resourceId !== undefined) {
    from = "audit_log_resources r JOIN audit_logs a ON a.pk = r.audit_pk";
    where.push(q.workspaceId === undefined ? "r.workspace_id IS NULL" : "r.workspace_id = ?", "r.resource_id = ?");
    if (q.workspaceId !== undefined) params.push(q.workspaceId);
    params.push(q.resourceId);
  }
  if (q.since !== undefined) {
    where.push("a.time_m >= ?");
    params.push(q.since);
  }
  if (q.until !== undefined) {
    where.push("a.time_m <= ?");
    params.push(q.until);
  }
  if (q.actorId !== undefined) {
    where.push("a.actor_id = ?");
    params.push(q.actorId);
  }
  if (q.actions.length > 0) {
    where.push(`a.action IN (${placeholders(q.actions.length)})`);
    params.push(...q.actions);
  }
  if (q.after !== undefined) {
    where.push("(a.time_m < ? OR (a.time_m = ? AND a.pk < ?))");
    params.push(q.after.time, q.after.time, q.after.pk);
  }
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const rs = await rows(
    db,
    `SELECT a.pk, a.id, a.workspace_id, a.time_m, a.actor_type, a.actor_id, a.action, a.resources, a.description, a.request_id, a.remote_address, a.user_agent
       FROM ${from} WHERE ${where.join(" AND ")} ORDER BY a.time_m DESC, a.pk DESC LIMIT ${q.limit + 1}`,
    params,
  );
  const page = rs.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    rows: page.map((r) => ({
      id: String(r.id),
      workspaceId: optStr(r.workspace_id),
      time: num(r.time_m),
      actorType: String(r.actor_type),
      actorId: String(r.actor_id),
      action: String(r.action),
      resources: JSON.parse(String(r.resources)) as AuditResource[],
      description: String(r.description),
      requestId: optStr(r.request_id),
      remoteAddress: optStr(r.remote_address),
      userAgent: optStr(r.user_agent),
    })),
    next: rs.length > q.limit && last !== undefined ? { time: num(last.time_m), pk: num(last.pk) } : undefined,
  };
}

/**
 * Deletes up to `batch` records older than `before` (and their resource rows) in
 * one short transaction's worth of statements; returns how many went. The caller
 * loops with a pause, so a large backlog never holds locks for long.
 */
export async function deleteAuditBefore(db: Queryable, before: number, batch: number): Promise<number> {
  const old = await rows(db, `SELECT pk FROM audit_logs WHERE time_m < ? ORDER BY time_m LIMIT ${batch}`, [before]);
  if (old.length === 0) return 0;
  const pks = old.map((r) => num(r.pk));
  await exec(db, `DELETE FROM audit_log_resources WHERE audit_pk IN (${placeholders(pks.length)})`, pks);
  const res = await exec(db, `DELETE FROM audit_logs WHERE pk IN (${placeholders(pks.length)})`, pks);
  return res.affectedRows;
}
