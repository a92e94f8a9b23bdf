// Operators, the workspaces they may act on, and their dashboard sessions
// (migration 0006). Sessions are found by the SHA-256 of their token only.
import { randomBytes } from "node:crypto";
import bs58 from "bs58";
import { exec, isDuplicateKey, one, type Queryable, rows } from "./sql.js";

export interface OperatorRow {
  id: string;
  email: string;
  passwordHash: string;
}

export interface OperatorWorkspace {
  id: string;
  name: string;
  enabled: boolean;
}

export class OperatorExistsError extends Error {}

/** `op_` + base58 of 16 random bytes (operators are few; no time ordering needed). */
const operatorId = () => `op_${bs58.encode(randomBytes(16))}`;

export async function insertOperator(db: Queryable, r: { email: string; passwordHash: string; now: number }): Promise<string> {
  const id = operatorId();
  try {
    await exec(db, "INSERT INTO operators (id, email, password_hash, created_at_m) VALUES (?, ?, ?, ?)", [id, r.email, r.passwordHash, r.now]);
  } catch (err) {
    if (isDuplicateKey(err)) throw new OperatorExistsError(`an operator with email ${r.email} already exists`);
    throw err;
  }
  return id;
}

export async function findOperatorByEmail(db: Queryable, email: string): Promise<OperatorRow | undefined> {
  const r = await one(db, "SELECT id, email, password_hash FROM operators WHERE email = ?", [email]);
  return r && { id: String(r.id), email: String(r.email), passwordHash: String(r.password_hash) };
}

/** Links the operator to the workspace (idempotent). */
export async function linkWorkspace(db: Queryable, operatorId: string, workspaceId: string, now: number): Promise<void> {
  await exec(db, "INSERT IGNORE INTO operator_workspaces (operator_id, workspace_id, created_at_m) VALUES (?, ?, ?)", [operatorId, workspaceId, now]);
}

/** The live workspaces the operator may act on, by name. */
export async function operatorWorkspaces(db: Queryable, operatorId: string): Promise<OperatorWorkspace[]> {
  const rs = await rows(
    db,
    `SELECT w.id, w.name, w.enabled FROM operator_workspaces ow
       JOIN workspaces w ON w.id = ow.workspace_id AND w.deleted_at_m IS NULL
      WHERE ow.operator_id = ? ORDER BY w.name`,
    [operatorId],
  );
  return rs.map((r) => ({ id: String(r.id), name: String(r.name), enabled: Boolean(r.enabled) }));
}

/** The workspace when it is live and the operator is a member of it. */
export async function operatorWorkspace(db: Queryable, operatorId: string, workspaceId: string): Promise<OperatorWorkspace | undefined> {
  const r = await one(
    db,
    `SELECT w.id, w.name, w.enabled FROM operator_workspaces ow
       JOIN workspaces w ON w.id = ow.workspace_id AND w.deleted_at_m IS NULL
      WHERE ow.operator_id = ? AND ow.workspace_id = ?`,
    [operatorId, workspaceId],
  );
  return r && { id: String(r.id), name: String(r.name), enabled: Boolean(r.enabled) };
}

export interface SessionRow {
  id: string;
  operatorId: string;
  email: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
}

export async function insertSession(db: Queryable, s: { id: string; operatorId: string; now: number; expiresAt: number }): Promise<void> {
  await exec(db, "INSERT INTO operator_sessions (id, operator_id, created_at_m, expires_at_m, last_seen_at_m) VALUES (?, ?, ?, ?, ?)", [
    s.id,
    s.operatorId,
    s.now,
    s.expiresAt,
    s.now,
  ]);
}

export async function findSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  const r = await one(
    db,
    `SELECT s.id, s.operator_id, o.email, s.created_at_m, s.expires_at_m, s.last_seen_at_m
       FROM operator_sessions s JOIN operators o ON o.id = s.operator_id WHERE s.id = ?`,
    [id],
  );
  return (
    r && {
      id: String(r.id),
      operatorId: String(r.operator_id),
      email: String(r.email),
      createdAt: Number(r.created_at_m),
      expiresAt: Number(r.expires_at_m),
      lastSeenAt: Number(r.last_seen_at_m),
    }
  );
}

export async function touchSession(db: Queryable, id: string, now: number): Promise<void> {
  await exec(db, "UPDATE operator_sessions SET last_seen_at_m = ? WHERE id = ?", [now, id]);
}

/** False when there was no such session. */
export async function deleteSession(db: Queryable, id: string): Promise<boolean> {
  const r = await exec(db, "DELETE FROM operator_sessions WHERE id = ?", [id]);
  return r.affectedRows === 1;
}

/** Drops sessions past their end or idle too long (now and then; ended ones are refused regardless). */
export async function deleteEndedSessions(db: Queryable, now: number, idleMs: number): Promise<void> {
  await exec(db, "DELETE FROM operator_sessions WHERE expires_at_m <= ? OR last_seen_at_m <= ?", [now, now - idleMs]);
}
