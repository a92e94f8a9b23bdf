// Dashboard sessions. The token (32 random bytes) lives only in the browser's
// cookie; the database keeps its SHA-256, so a leaked table opens no session.
// The CSRF token is derived from the session token with HMAC: the server can
// check it on every request without storing it, and a page that cannot read the
// cookie (HttpOnly) cannot compute it.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { deleteEndedSessions, deleteSession, findSession, insertSession, type SessionRow, touchSession } from "../../storage/operators.js";
import { type Queryable, transaction } from "../../storage/sql.js";
import { type Actor, operatorSelf, writeAudit } from "../audit/audit.js";
import type { RequestOrigin } from "../auth/principal.js";
import type { Deps } from "../deps.js";

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

/**
 * Starts a session for an operator whose password was just checked, and records
 * the sign-in in the same transaction. Returns the token (for the cookie only:
 * neither it nor its hash is in the record).
 */
export async function startSession(
  deps: Pick<Deps, "pool" | "clock">,
  operatorId: string,
  s: SessionSettings,
  origin: RequestOrigin | undefined,
): Promise<string> {
  const started = deps.clock.now();
  // Ended sessions that nobody came back with are deleted at sign-ins, at most once
  // a minute, outside the sign-in's transaction: its scan would hold a lock on
  // every session row until the sign-in commits.
  if (started - sweptAt >= SWEEP_EVERY_MS) {
    sweptAt = started;
    await deleteEndedSessions(deps.pool, started, s.idleMs);
  }
  return transaction(deps.pool, async (conn) => {
    const now = deps.clock.now();
    const token = randomBytes(32).toString("base64url");
    await insertSession(conn, { id: sessionIdOf(token), operatorId, now, expiresAt: now + s.maxMs });
    await writeAudit(conn, deps, operatorSelf(operatorId, origin), {
      action: "operator.sign_in",
      resources: [{ type: "operator", id: operatorId }],
      description: "Signed in to the dashboard with email and password; a session started.",
    });
    return token;
  });
}

/**
 * Records a refused sign-in (wrong password, or an email no operator has). The
 * email tried is not recorded: a mistyped one is often the password itself,
 * typed into the wrong field. The sign-in limiter (attempts.ts) runs before,
 * so a flood of wrong passwords cannot flood the log either.
 */
export async function recordFailedSignIn(deps: Pick<Deps, "pool" | "clock">, operatorId: string | undefined, origin: RequestOrigin | undefined): Promise<void> {
  const actor: Actor = operatorId === undefined ? { workspaceId: undefined, type: "operator", id: "unknown", origin } : operatorSelf(operatorId, origin);
  await transaction(deps.pool, (conn) =>
    writeAudit(conn, deps, actor, {
      action: "operator.sign_in_failed",
      // An unknown email is a resource too, so both refusals send the same statements and take the same time.
      resources: [{ type: "operator", id: operatorId ?? "unknown" }],
      description: operatorId === undefined ? "A sign-in with an email no operator has was refused." : "A sign-in with a wrong password was refused.",
    }),
  );
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

/**
 * Ends the session of this token and records the sign-out in the same
 * transaction; false when there was no such session (nothing changed, no record).
 */
export async function endSession(deps: Pick<Deps, "pool" | "clock">, token: string, origin: RequestOrigin | undefined): Promise<boolean> {
  if (!TOKEN.test(token)) return false;
  return transaction(deps.pool, async (conn) => {
    const session = await findSession(conn, sessionIdOf(token));
    // Only the request whose delete took the row records it (two sign-outs may race).
    if (session === undefined || !(await deleteSession(conn, session.id))) return false;
    await writeAudit(conn, deps, operatorSelf(session.operatorId, origin), {
      action: "operator.sign_out",
      resources: [{ type: "operator", id: session.operatorId }],
      description: "Signed out of the dashboard; the session ended.",
    });
    return true;
  });
}
