// The audit log's rows (migration 0008). Records are written only inside the
// transaction of the change they describe (domain/audit/audit.ts); reading is
// newest first by (time_m, pk), with an opaque cursor naming the last row seen.
import { exec, num, optStr, placeholders, type Queryable, type Row, rows, type Statement } from "./sql.js";

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

/** The index rows' INSERT for n resources, made once for each n (the same text each time: sql.ts remembers how it merges). */
const indexSqls: string[] = [];
const indexRowsSql = (n: number): string =>
  (indexSqls[n] ??= `INSERT INTO audit_resources (audit_id, workspace_id, resource_id) VALUES ${Array.from({ length: n }, () => "(?, ?, ?)").join(", ")}`);

/**
 * The record's INSERT and its resource index's (migration 0012: index rows name
 * their record by its id, which keyhold makes). Neither reads the other, so both
 * are marked `rows`: in a group of changes (commitWithOthers: many createKeys at
 * once) every record goes in one INSERT and every index row in one more (sql.ts,
 * Statement.rows). Measured on MariaDB 10.11 (bench/README.md, createKey): the
 * database's CPU a record 68 µs in SQL alone, against 81 when the index rows
 * found their records' AUTO_INCREMENT pk through a JSON_TABLE join.
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
  const workspaceId = r.workspaceId ?? null;
  return [
    record,
    {
      sql: indexRowsSql(ids.length),
      rows: true,
      params: ids.flatMap((id) => [r.id, workspaceId, id]),
    },
  ];
}

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
  const columns =
    "a.pk, a.id, a.workspace_id, a.time_m, a.actor_type, a.actor_id, a.action, a.resources, a.description, a.request_id, a.remote_address, a.user_agent";
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const order = `ORDER BY a.time_m DESC, a.pk DESC LIMIT ${q.limit + 1}`;
  let rs: Row[];
  if (q.resourceId === undefined) rs = await rows(db, `SELECT ${columns} FROM audit_logs a WHERE ${where.join(" AND ")} ${order}`, params);
  else {
    // By resource: through audit_resources, and through the index rows that instances of an
    // earlier version wrote and the audit sweep has not moved yet (moveEarlierIndexRows), so
    // that no record is missed during an upgrade. A record's rows in both (moved, not yet
    // deleted) are one row of the UNION.
    const r = [q.workspaceId === undefined ? "r.workspace_id IS NULL" : "r.workspace_id = ?", "r.resource_id = ?"];
    const rParams = q.workspaceId === undefined ? [q.resourceId] : [q.workspaceId, q.resourceId];
    const all = [...r, ...where].join(" AND ");
    rs = await rows(
      db,
      `SELECT a.* FROM (
         SELECT ${columns} FROM audit_resources r JOIN audit_logs a ON a.id = r.audit_id WHERE ${all}
         UNION
         SELECT ${columns} FROM audit_log_resources r JOIN audit_logs a ON a.pk = r.audit_pk WHERE ${all}
       ) a ${order}`,
      [...rParams, ...params, ...rParams, ...params],
    );
  }
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
  const old = await rows(db, `SELECT pk, id FROM audit_logs WHERE time_m < ? ORDER BY time_m LIMIT ${batch}`, [before]);
  if (old.length === 0) return 0;
  const ids = old.map((r) => String(r.id));
  await exec(db, `DELETE FROM audit_resources WHERE audit_id IN (${placeholders(ids.length)})`, ids);
  const pks = old.map((r) => num(r.pk));
  const res = await exec(db, `DELETE FROM audit_logs WHERE pk IN (${placeholders(pks.length)})`, pks);
  return res.affectedRows;
}

/** At most this many index rows a move (past a first record that alone has more): a key.migrate record indexes up to 1,002 resources. */
const MOVE_ROWS_MAX = 5_000;

/**
 * Moves the index rows of up to `batch` records (and about MOVE_ROWS_MAX rows)
 * from audit_log_resources (by audit_logs' pk, as instances of an earlier version
 * write it) into audit_resources (by id); returns how many records' rows it
 * took, 0 when none are left. Rows whose record is gone (retention) are dropped.
 * A record's rows commit together with it, so they are taken whole, by pk. The
 * copy goes first and is made by the database (no rows through keyhold): a crash
 * between the two statements, or two instances moving the same rows, copies them
 * again into the same rows (INSERT IGNORE). listAudit reads both tables, so a
 * record is found by its resources before, during and after its move.
 */
export async function moveEarlierIndexRows(db: Queryable, batch: number): Promise<number> {
  const counts = await rows(db, `SELECT audit_pk, COUNT(*) AS n FROM audit_log_resources GROUP BY audit_pk ORDER BY audit_pk LIMIT ${batch}`);
  const pks: number[] = [];
  let total = 0;
  for (const c of counts) {
    if (pks.length > 0 && total + num(c.n) > MOVE_ROWS_MAX) break;
    pks.push(num(c.audit_pk));
    total += num(c.n);
  }
  if (pks.length === 0) return 0;
  const list = placeholders(pks.length);
  await exec(
    db,
    `INSERT IGNORE INTO audit_resources (audit_id, workspace_id, resource_id)
       SELECT a.id, r.workspace_id, r.resource_id FROM audit_log_resources r JOIN audit_logs a ON a.pk = r.audit_pk
        WHERE r.audit_pk IN (${list}) ORDER BY r.audit_pk, r.resource_id`,
    pks,
  );
  await exec(db, `DELETE FROM audit_log_resources WHERE audit_pk IN (${list})`, pks);
  return pks.length;
}
