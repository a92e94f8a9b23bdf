// ANALYTICS_RAW_RETENTION_DAYS: raw events older than that are deleted in
// batches of 5,000 with a pause between them (as the audit log's sweep), so a
// backlog never holds locks for long. The roll-ups are kept: charts and queries
// over long ranges read them.
import type { Logger } from "../../core/logger.js";
import { deleteRawAnalyticsBefore, RAW_TABLES, rawGroupsBefore } from "../../storage/analytics.js";
import type { Pool } from "../../storage/sql.js";

const BATCH = 5_000;
const PAUSE_MS = 20;

/** Deletes every raw event older than `before`; returns how many rows went (a pack of a hot key's events is one). */
export async function sweepRawAnalytics(pool: Pool, before: number, log?: Logger, batch = BATCH): Promise<number> {
  let total = 0;
  for (const table of RAW_TABLES) {
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
