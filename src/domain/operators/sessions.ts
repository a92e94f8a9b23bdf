// Dashboard sessions. The token (32 random bytes) lives only in the browser's
// cookie; the database keeps its SHA-256, so a leaked table opens no session.
// The CSRF token is derived from the session token with HMAC: the server can
// check it on every request without storing it, and a page that cannot read the
// cookie (HttpOnly) cannot compute it.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { deleteEndedSessions, deleteSession, findSession, insertSession, type SessionRow, touchSession } from "../../storage/operators.js";
import type { Queryable } from "../../storage/sql.js";

export interface SessionSettings {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, used or not. */
  maxMs: number;
}

/** last_seen is written at most this often per session (not on every request). */
const TOUCH_EVERY_MS = 60_000;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const sessionIdOf = (token: string): string => createHash("sha256").update(token).digest("hex");

export const csrfTokenOf = (token: string): string => createHmac("sha256", token).update("keyhold dashboard csrf").digest("base64url");

/** Constant-time comparison of the header with the session's CSRF token. */
export function csrfMatches(token: string, header: string | undefined): boolean {
  if (header === undefined) return false;
  const a = createHash("sha256").update(csrfTokenOf(token)).digest();
  const b = createHash("sha256").update(header).digest();
  return timingSafeEqual(a, b);
}

const SWEEP_EVERY_MS = 60_000;
let sweptAt = 0;

export async function startSession(db: Queryable, operatorId: string, now: number, s: SessionSettings): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  await insertSession(db, { id: sessionIdOf(token), operatorId, now, expiresAt: now + s.maxMs });
  // Ended sessions that nobody came back with are deleted at sign-ins, at most once a minute.
  if (now - sweptAt >= SWEEP_EVERY_MS) {
    sweptAt = now;
    await deleteEndedSessions(db, now, s.idleMs);
  }
  return token;
}

/** The live session of this token, or undefined (an ended one is deleted on the way). */
export async function resumeSession(db: Queryable, token: string, now: number, s: SessionSettings): Promise<SessionRow | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const session = await findSession(db, sessionIdOf(token));
  if (session === undefined) return undefined;
  if (now >= session.expiresAt || now - session.lastSeenAt >= s.idleMs) {
    await deleteSession(db, session.id);
    return undefined;
  }
  if (now - session.lastSeenAt >= TOUCH_EVERY_MS) await touchSession(db, session.id, now);
  return session;
}

export const endSession = (db: Queryable, token: string): Promise<void> => deleteSession(db, sessionIdOf(token));
