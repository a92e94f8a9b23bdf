// Idempotency records: claimed before a mutating request runs, completed with its
// (encrypted) response, released when it fails. See migrations/0002_idempotency.sql.
import { exec, one, type Queryable } from "./sql.js";

/** Whose record: one root key of one workspace, and the client's key (hashed). */
export interface IdempotencyScope {
  workspaceId: string;
  rootKeyId: string;
  keyHash: string;
}

export interface IdempotencyRecord {
  operation: string;
  requestHash: string;
  done: boolean;
  /** The response, encrypted; with the id of the data key that encrypted it. */
  response: { encrypted: string; encryptionKeyId: string } | undefined;
}

const WHERE = "workspace_id = ? AND root_key_id = ? AND key_hash = ?";
const at = (s: IdempotencyScope) => [s.workspaceId, s.rootKeyId, s.keyHash];

/**
 * Claims the scope's key for this request; true when this request may run. An
 * expired record of the same key is dropped first and the key claimed afresh.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  s: IdempotencyScope,
  r: { operation: string; requestHash: string; now: number; expiresAt: number },
): Promise<boolean> {
  await exec(db, `DELETE FROM idempotency_records WHERE ${WHERE} AND expires_at_m <= ?`, [...at(s), r.now]);
  const res = await exec(
    db,
    "INSERT IGNORE INTO idempotency_records (workspace_id, root_key_id, key_hash, operation, request_hash, state, created_at_m, expires_at_m) VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
    [...at(s), r.operation, r.requestHash, r.now, r.expiresAt],
  );
  return res.affectedRows === 1;
}

export async function findIdempotencyRecord(db: Queryable, s: IdempotencyScope, now: number): Promise<IdempotencyRecord | undefined> {
  const r = await one(db, `SELECT operation, request_hash, state, response, encryption_key_id FROM idempotency_records WHERE ${WHERE} AND expires_at_m > ?`, [
    ...at(s),
    now,
  ]);
  if (r === undefined) return undefined;
  const response =
    r.response === null || r.encryption_key_id === null ? undefined : { encrypted: String(r.response), encryptionKeyId: String(r.encryption_key_id) };
  return { operation: String(r.operation), requestHash: String(r.request_hash), done: Number(r.state) === 1, response };
}

export async function completeIdempotencyKey(db: Queryable, s: IdempotencyScope, response: { encrypted: string; encryptionKeyId: string }): Promise<void> {
  await exec(db, `UPDATE idempotency_records SET state = 1, response = ?, encryption_key_id = ? WHERE ${WHERE} AND state = 0`, [
    response.encrypted,
    response.encryptionKeyId,
    ...at(s),
  ]);
}

export async function releaseIdempotencyKey(db: Queryable, s: IdempotencyScope): Promise<void> {
  await exec(db, `DELETE FROM idempotency_records WHERE ${WHERE} AND state = 0`, at(s));
}

/** Deletes up to `limit` expired records; returns how many. */
export async function sweepIdempotencyRecords(db: Queryable, now: number, limit = 1_000): Promise<number> {
  const res = await exec(db, `DELETE FROM idempotency_records WHERE expires_at_m <= ? LIMIT ${limit}`, [now]);
  return res.affectedRows;
}
