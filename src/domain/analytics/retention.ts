// ANALYTICS_RAW_RETENTION_DAYS: raw events older than that are deleted in
// batches of 5,000 rows with a pause between them (as the audit log's sweep), so
// a backlog never holds locks for long; a pack of a hot key's events
// (migrations/0015, 0016) once its last event is older. The roll-ups are kept:
// charts and queries over long ranges read them.
import type { Logger } from "../../core/logger.js";
import { deleteRawAnalyticsBefore, RAW_TABLES, rawGroupsBefore } from "../../storage/analytics.js";
import type { Pool } from "../../storage/sql.js";

const BATCH = 5_000;
const PAUSE_MS = 20;
/**
 * A packed table's rows a batch, against `batch` rows: a pack holds up to
 * PACK_AT_MOST (2,000) events, ~75 KB of JSON, so 5,000 of them would be one
 * transaction of ~375 MB. A 250th (20 packs, at most ~1.5 MB) is about what
 * 5,000 rows of ~210 bytes hold.
 */
const packsOf = (batch: number): number => Math.max(1, Math.floor(batch / 250));

/** Deletes every raw event older than `before` (a pack once its last is); returns how many rows went (a pack is one). */
export async function sweepRawAnalytics(pool: Pool, before: number, log?: Logger, rows = BATCH): Promise<number> {
  let total = 0;
  for (const table of RAW_TABLES) {
    const batch = table.endsWith("_packed") ? packsOf(rows) : rows;
    // Group by group (a workspace's key space or namespace): the primary key's ranges, the tables having no index on time alone.
    for (const group of await rawGroupsBefore(pool, table, before)) {
      for (;;) {
        const n = await deleteRawAnalyticsBefore(pool, table, group, before, batch);
        total += n;
        if (n < batch) break;
        await new Promise((r) => setTimeout(r, PAUSE_MS));
      }
    }
  }
  if (total > 0) log?.info({ deleted: total, before: new Date(before).toISOString() }, "analytics retention: old raw rows deleted");
  return total;
}
