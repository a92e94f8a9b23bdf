// AUDIT_RETENTION_DAYS: records older than that are deleted in batches of 1,000
// with a pause between them, so a year's backlog never holds locks or the
// binlog for long, and one sweep at a time per instance. Every instance sweeps;
// deleting what another already deleted is a cheap no-op. Each sweep first moves
// the resource index rows that instances of an earlier version wrote into the
// table this version reads (migration 0012), in batches the same way.
import type { Logger } from "../../core/logger.js";
import { deleteAuditBefore, moveEarlierIndexRows } from "../../storage/audit.js";
import type { Pool } from "../../storage/sql.js";

export const AUDIT_SWEEP_BATCH = 1_000;
const PAUSE_MS = 20;

/** Runs `step` until it does less than a batch, pausing between batches; returns the sum. */
async function inBatches(step: () => Promise<number>, batch: number, progress: (total: number) => void): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await step();
    total += n;
    if (n < batch) return total;
    if (total % (batch * 50) === 0) progress(total);
    await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
}

/** Deletes every record older than `before`, batch by batch; returns how many went. */
export async function sweepAuditLog(pool: Pool, before: number, log?: Logger, batch = AUDIT_SWEEP_BATCH): Promise<number> {
  const moved = await inBatches(
    () => moveEarlierIndexRows(pool, batch),
    batch,
    (n) => log?.info({ records: n }, "audit log: still moving the resource index of an earlier version"),
  );
  if (moved > 0) log?.info({ records: moved }, "audit log: resource index rows of an earlier version moved");
  const total = await inBatches(
    () => deleteAuditBefore(pool, before, batch),
    batch,
    (n) => log?.info({ deleted: n }, "audit log retention: still deleting old records"),
  );
  if (total > 0) log?.info({ deleted: total, before: new Date(before).toISOString() }, "audit log retention: old records deleted");
  return total;
}
