// AUDIT_RETENTION_DAYS: records older than that are deleted in batches of 1,000
// with a pause between them, so a year's backlog never holds locks or the
// binlog for long, and one sweep at a time per instance. Every instance sweeps;
// deleting what another already deleted is a cheap no-op. Each sweep first moves
// the resource index rows that instances of an earlier version wrote into the
// table this version writes (migration 0012), in batches the same way; a move
// that fails is logged and retention still runs.
import type { Logger } from "../../core/logger.js";
import { deleteAuditBefore, moveEarlierIndexRows } from "../../storage/audit.js";
import type { Pool } from "../../storage/sql.js";

export const AUDIT_SWEEP_BATCH = 1_000;
const PAUSE_MS = 20;
const pause = () => new Promise((r) => setTimeout(r, PAUSE_MS));

/** Moves every index row of an earlier version, batch by batch; returns how many records' rows went. */
export async function moveEarlierIndex(pool: Pool, log?: Logger, batch = AUDIT_SWEEP_BATCH): Promise<number> {
  let total = 0;
  for (let n = await moveEarlierIndexRows(pool, batch); n > 0; n = await moveEarlierIndexRows(pool, batch)) {
    total += n;
    if (total % (batch * 50) < n) log?.info({ records: total }, "audit log: still moving the resource index of an earlier version");
    await pause();
  }
  if (total > 0) log?.info({ records: total }, "audit log: the resource index of an earlier version moved");
  return total;
}

/** Deletes every record older than `before`, batch by batch; returns how many went. */
export async function sweepAuditLog(pool: Pool, before: number, log?: Logger, batch = AUDIT_SWEEP_BATCH): Promise<number> {
  await moveEarlierIndex(pool, log, batch).catch((err: unknown) => log?.warn({ err }, "could not move the audit log's resource index of an earlier version"));
  let total = 0;
  for (;;) {
    const n = await deleteAuditBefore(pool, before, batch);
    total += n;
    if (n < batch) break;
    if (total % (batch * 50) === 0) log?.info({ deleted: total }, "audit log retention: still deleting old records");
    await pause();
  }
  if (total > 0) log?.info({ deleted: total, before: new Date(before).toISOString() }, "audit log retention: old records deleted");
  return total;
}
