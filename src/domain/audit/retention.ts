// AUDIT_RETENTION_DAYS: records older than that are deleted in batches of 1,000
// with a pause between them, so a year's backlog never holds locks or the
// binlog for long, and one sweep at a time per instance. Every instance sweeps;
// deleting what another already deleted is a cheap no-op.
import type { Logger } from "../../core/logger.js";
import { deleteAuditBefore } from "../../storage/audit.js";
import type { Pool } from "../../storage/sql.js";

export const AUDIT_SWEEP_BATCH = 1_000;
const PAUSE_MS = 20;

/** Deletes every record older than `before`, batch by batch; returns how many went. */
export async function sweepAuditLog(pool: Pool, before: number, log?: Logger, batch = AUDIT_SWEEP_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deleteAuditBefore(pool, before, batch);
    total += n;
    if (n < batch) break;
    if (total % (batch * 50) === 0) log?.info({ deleted: total }, "audit log retention: still deleting old records");
    await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
  if (total > 0) log?.info({ deleted: total, before: new Date(before).toISOString() }, "audit log retention: old records deleted");
  return total;
}
