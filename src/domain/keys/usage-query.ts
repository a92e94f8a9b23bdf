// The usage charts' query: verifications over time by outcome (read from the
// analytics roll-ups by storage/analytics-usage.ts), once the range asked for is
// one this may answer.

import { GRANULARITY_MS, keySpaceOfApi, MAX_USAGE_BUCKETS, readUsage, type UsageGranularity, type UsagePoint } from "../../storage/analytics-usage.js";
import type { Queryable } from "../../storage/sql.js";
import { Validator } from "../validate.js";

export interface UsageQuery {
  workspaceId: string;
  apiId?: string | undefined;
  keyId?: string | undefined;
  from: number;
  to: number;
  granularity: UsageGranularity;
}

/** Verifications of one key, one API's total or the workspace's, per bucket of the granularity (see readUsage). */
export async function queryUsage(db: { main: Queryable; analytics: Queryable }, q: UsageQuery): Promise<UsagePoint[]> {
  validateRange(q);
  // The roll-ups know an API by its key space: another workspace's API id finds none, and so no rows.
  let keySpaceId: string | undefined;
  if (q.apiId !== undefined) {
    keySpaceId = await keySpaceOfApi(db.main, q.workspaceId, q.apiId);
    if (keySpaceId === undefined) return [];
  }
  return readUsage(db.analytics, { workspaceId: q.workspaceId, keySpaceId, keyId: q.keyId, from: q.from, to: q.to, granularity: q.granularity });
}

/** The granularity in ms, once the query's range is one this may answer. */
function validateRange(q: { from: number; to: number; granularity: UsageGranularity }): void {
  const v = new Validator();
  const gran = GRANULARITY_MS[q.granularity] as number | undefined;
  if (gran === undefined) v.add("granularity", `granularity must be one of ${Object.keys(GRANULARITY_MS).join(", ")}.`);
  const time = (field: "from" | "to", value: number) => {
    if (!Number.isSafeInteger(value) || value < 0) v.add(field, `${field} must be a time in unix milliseconds (got ${value}).`);
  };
  time("from", q.from);
  time("to", q.to);
  if (v.errors.length === 0 && q.to <= q.from) v.add("to", `to must be after from (got from ${q.from}, to ${q.to}).`);
  if (v.errors.length === 0 && gran !== undefined) {
    const buckets = Math.ceil(q.to / gran) - Math.floor(q.from / gran);
    if (buckets > MAX_USAGE_BUCKETS) {
      v.add(
        "to",
        `from and to span ${buckets} ${q.granularity}s; at most ${MAX_USAGE_BUCKETS} may be asked for at once.`,
        "Ask for a shorter range, or a coarser granularity (hour or day).",
      );
    }
  }
  v.done();
}
