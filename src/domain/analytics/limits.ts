import type { Pool } from "../../storage/sql.js";

/** Where users' analytics queries run, and their limits (ANALYTICS_QUERY_TIMEOUT_MS, ANALYTICS_MAX_ROWS). */
export interface AnalyticsLimits {
  /** The read-only pool (storage/db.ts analyticsPoolOf), never the API's. */
  pool: Pool;
  timeoutMs: number;
  maxRows: number;
}
