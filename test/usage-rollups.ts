// Rows put straight into the analytics roll-ups (migrations/0009_analytics.sql),
// for tests of what reads them (the usage charts): each row is exactly the
// bucket, key and count a test means, whatever the recorder would have made of
// a verification, and at any time, which a verification (made now) cannot be.
import { createHash } from "node:crypto";
import type { Pool } from "mysql2/promise";

export interface RollupRow {
  /** The bucket's start, unix ms (aligned to the roll-up's width by the caller). */
  time: number;
  workspaceId: string;
  /** The API's key_auth_id; "" for NOT_FOUND. */
  keySpaceId: string;
  /** The API of that key space; "" for NOT_FOUND (and where a test does not care). */
  apiId?: string;
  /** "" for NOT_FOUND. */
  keyId: string;
  outcome: string;
  count: number;
  identityId?: string;
  tags?: string[];
}

/** Adds the rows to analytics_verifications_per_<width>, summing into a row already there (as the recorder does). */
export async function insertRollupRows(pool: Pool, width: "minute" | "hour" | "day" | "month", rows: RollupRow[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map((r) => {
    const tags = JSON.stringify(r.tags ?? []);
    return [
      new Date(r.time).toISOString().slice(0, 19).replace("T", " "),
      r.workspaceId,
      r.keySpaceId,
      r.apiId ?? "",
      r.keyId,
      r.identityId ?? "",
      "",
      r.outcome,
      tags,
      createHash("md5").update(tags).digest("hex"),
      r.count,
      0,
    ];
  });
  await pool.query(
    `INSERT INTO analytics_verifications_per_${width} (\`time\`, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, tags, tags_hash, count, spent_credits)
     VALUES ? ON DUPLICATE KEY UPDATE count = count + VALUES(count)`,
    [values],
  );
}

/** The key space (key_auth_id) of an API: what the roll-ups know it by. */
export async function keySpaceOf(pool: Pool, apiId: string): Promise<string> {
  const [found] = await pool.query("SELECT key_auth_id FROM apis WHERE id = ?", [apiId]);
  const row = (found as Array<{ key_auth_id: string }>)[0];
  if (row === undefined) throw new Error(`no API ${apiId}`);
  return row.key_auth_id;
}
