// Idempotency records: claimed before a mutating request runs, completed with its
// response, released when it fails. See migrations/0002_idempotency.sql.
import { exec, one, type Queryable } from "./sql.js";

export interface IdempotencyRecord {
  operation: string;
  requestHash: string;
  done: boolean;
  response: Buffer | undefined;
}

/**
 * Claims (workspace, key) for this request; true when this request may run. An
 * expired record of the same key is dropped first and the key claimed afresh.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  r: { workspaceId: string; keyHash: string; operation: string; requestHash: string; now: number; expiresAt: number },
): Promise<boolean> {
  await exec(db, "DELETE FROM idempotency_records WHERE workspace_id = ? AND key_hash = ? AND expires_at_m <= ?", [r.workspaceId, r.keyHash, r.now]);
  const res = await exec(
    db,
    "INSERT IGNORE INTO idempotency_records (workspace_id, key_hash, operation, request_hash, state, created_at_m, expires_at_m) VALUES (?, ?, ?, ?, 0, ?, ?)",
    [r.workspaceId, r.keyHash, r.operation, r.requestHash, r.now, r.expiresAt],
  );
  return res.affectedRows === 1;
}

export async function findIdempotencyRecord(db: Queryable, workspaceId: string, keyHash: string, now: number): Promise<IdempotencyRecord | undefined> {
  const r = await one(db, "SELECT operation, request_hash, state, response FROM idempotency_records WHERE workspace_id = ? AND key_hash = ? AND expires_at_m > ?", [
    workspaceId,
    keyHash,
    now,
  ]);
  if (r === undefined) return undefined;
  return { operation: String(r.operation), requestHash: String(r.request_hash), done: Number(r.state) === 1, response: (r.response as Buffer | null) ?? undefined };
}

export async function completeIdempotencyKey(db: Queryable, workspaceId: string, keyHash: string, response: Uint8Array): Promise<void> {
  await exec(db, "UPDATE idempotency_records SET state = 1, response = ? WHERE workspace_id = ? AND key_hash = ? AND state = 0", [
    Buffer.from(response.buffer, response.byteOffset, response.byteLength),
    workspaceId,
    keyHash,
  ]);
}

export async function releaseIdempotencyKey(db: Queryable, workspaceId: string, keyHash: string): Promise<void> {
  await exec(db, "DELETE FROM idempotency_records WHERE workspace_id = ? AND key_hash = ? AND state = 0", [workspaceId, keyHash]);
}

/** Deletes up to `limit` expired records; returns how many. */
export async function sweepIdempotencyRecords(db: Queryable, now: number, limit = 1_000): Promise<number> {
  const res = await exec(db, `DELETE FROM idempotency_records WHERE expires_at_m <= ? LIMIT ${limit}`, [now]);
  return res.affectedRows;
}
