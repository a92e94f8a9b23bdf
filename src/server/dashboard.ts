// The dashboard's server side: operator sign-in, the session, sign-out under
// /dashboard/api/, and the session check that lets the Connect door serve the
// dashboard's RPCs with an operator's session instead of a root key.
//
// Cookie `keyhold_session`: HttpOnly, SameSite=Strict, Path=/, Secure when the
// request came over https (DASHBOARD_COOKIE_SECURE=auto) or always/never as set;
// with Secure it is named `__Host-keyhold_session`, and only that name is read.
// Every state-changing call with a session (POSTs except sign-in) must send
// `x-csrf-token` (the token sign-in returned) and an Origin (or Referer) naming
// the scheme and Host it is sent to; sign-in checks the Origin too (login CSRF).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, invalidInput } from "../core/errors.js";
import type { Principal } from "../domain/auth/principal.js";
import type { Deps } from "../domain/deps.js";
import { SignInAttempts } from "../domain/operators/attempts.js";
import { isEmail, normalizeEmail } from "../domain/operators/email.js";
import { dummyHash, MAX_PASSWORD_LENGTH, verifyPassword } from "../domain/operators/password.js";
import { OPERATOR_GRANTS, operatorActor } from "../domain/operators/principal.js";
import { csrfMatches, csrfTokenOf, endSession, recordFailedSignIn, resumeSession, type SessionSettings, startSession } from "../domain/operators/sessions.js";
import { findOperatorByEmail, operatorWorkspace, operatorWorkspaces, type SessionRow } from "../storage/operators.js";
import { HttpOrigin } from "../transport/origin.js";
import type { Config } from "./config.js";

/**
 * The session cookie's name. With Secure it takes the `__Host-` prefix: the browser
 * then refuses it a Domain, so a sibling subdomain cannot set one that shadows ours.
 */
export const sessionCookieName = (secure: boolean): string => (secure ? "__Host-keyhold_session" : "keyhold_session");
/** The workspace a session-authenticated RPC acts on. */
export const WORKSPACE_HEADER = "x-keyhold-workspace";
export const CSRF_HEADER = "x-csrf-token";

const sessionSettings = (config: Config): SessionSettings => ({ idleMs: config.dashboardSessionIdleMs, maxMs: config.dashboardSessionMaxMs });

/**
 * The scheme the browser used: https whenever DASHBOARD_COOKIE_SECURE=always (set
 * behind a TLS-terminating proxy), else the one the request came with.
 */
const schemeOf = (config: Config, transport: string): string => (config.dashboardCookieSecure === "always" ? "https" : transport);

/** Whether the session cookie is set with Secure for a request with this scheme (from schemeOf). */
const secureCookie = (config: Config, scheme: string): boolean => config.dashboardCookieSecure !== "never" && scheme === "https";

/** The session token from a Cookie header, if any, read under the one name a request with this scheme is given. */
export function sessionTokenOf(config: Config, scheme: string, cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  const name = sessionCookieName(secureCookie(config, scheme));
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether Origin (or, without one, Referer) names the scheme and host the request was sent to. */
export function sameOrigin(scheme: string, host: string | undefined, origin: string | undefined, referer: string | undefined): boolean {
  const from = origin ?? referer;
  if (host === undefined || from === undefined || !URL.canParse(from)) return false;
  const u = new URL(from);
  if (u.protocol !== `${scheme}:` || (u.protocol !== "http:" && u.protocol !== "https:")) return false;
  // The Host header read with the Origin's scheme, so `localhost:80` and `http://localhost` agree.
  const sent = `${u.protocol}//${host}`;
  return URL.canParse(sent) && new URL(sent).host === u.host;
}

const forbidden = (detail: string) => new AppError("err:svc:authorization:forbidden", detail);
const signedOut = () => new AppError("err:svc:authentication:key_not_found", "The dashboard session is not valid (expired or signed out); sign in again.");

interface RequestHeaders {
  get(name: string): string | undefined;
}

/**
 * The scheme of a Connect call, which only its headers reach: the proxy's
 * X-Forwarded-Proto under TRUST_PROXY, else http (this server speaks no TLS itself).
 */
function connectScheme(config: Config, h: RequestHeaders): string {
  const forwarded = config.trustProxy === false ? undefined : h.get("x-forwarded-proto");
  return schemeOf(config, forwarded?.split(",").at(-1)?.trim().toLowerCase() || "http");
}

/** Origin and CSRF token of a state-changing request with this session token; throws 403. */
function checkUnsafe(scheme: string, h: RequestHeaders, token: string): void {
  if (!sameOrigin(scheme, h.get("host"), h.get("origin"), h.get("referer"))) throw forbidden("The request's Origin does not match the host it was sent to.");
  if (!csrfMatches(token, h.get(CSRF_HEADER))) throw forbidden(`The ${CSRF_HEADER} header is missing or does not match the session.`);
}

async function sessionOf(deps: Deps, config: Config, token: string | undefined): Promise<SessionRow> {
  if (token === undefined) throw new AppError("err:svc:authentication:missing", "Sign in to the dashboard first: no session cookie was sent.");
  const session = await resumeSession(deps.pool, token, deps.clock.now(), sessionSettings(config));
  if (session === undefined) throw signedOut();
  return session;
}

/** The live session of an RPC (every RPC is a POST): cookie, same Origin and CSRF token, or 401/403. */
export function callSession(deps: Deps, config: Config) {
  return async (headers: Headers): Promise<SessionRow> => {
    const h: RequestHeaders = { get: (n) => headers.get(n) ?? undefined };
    const scheme = connectScheme(config, h);
    const token = sessionTokenOf(config, scheme, h.get("cookie"));
    if (token === undefined) throw new AppError("err:svc:authentication:missing");
    checkUnsafe(scheme, h, token);
    return sessionOf(deps, config, token);
  };
}

/**
 * The principal of a Connect call made with a dashboard session (no Authorization
 * header): the operator acts with every permission in a workspace they belong
 * to. A workspace that does not exist and one they may not touch get the same 403.
 */
export function sessionAuthenticator(deps: Deps, config: Config) {
  const sessionOfCall = callSession(deps, config);
  return async (headers: Headers): Promise<Principal> => {
    const h: RequestHeaders = { get: (n) => headers.get(n) ?? undefined };
    const session = await sessionOfCall(headers);
    const workspaceId = h.get(WORKSPACE_HEADER)?.trim();
    if (!workspaceId) {
      throw invalidInput([
        {
          location: `header.${WORKSPACE_HEADER}`,
          message: `A call with a dashboard session must name the workspace to act on, in the ${WORKSPACE_HEADER} header.`,
        },
      ]);
    }
    const ws = await operatorWorkspace(deps.pool, session.operatorId, workspaceId);
    if (ws === undefined) throw forbidden("The workspace does not exist or this operator has no access to it.");
    if (!ws.enabled) throw new AppError("err:svc:authorization:workspace_disabled");
    return { workspaceId: ws.id, rootKeyId: operatorActor(session.operatorId), permissions: OPERATOR_GRANTS };
  };
}

async function sessionBody(deps: Deps, token: string, operator: { id: string; email: string }) {
  const workspaces = await operatorWorkspaces(deps.pool, operator.id);
  return {
    operator: { id: operator.id, email: operator.email },
    workspaces: workspaces.map((w) => ({ id: w.id, name: w.name })),
    csrfToken: csrfTokenOf(token),
  };
}

function cookie(req: FastifyRequest, config: Config, value: string, maxAgeSeconds: number): string {
  const secure = secureCookie(config, schemeOf(config, req.protocol));
  return `${sessionCookieName(secure)}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
}

const headersOf = (req: FastifyRequest): RequestHeaders => ({
  get: (n) => {
    const v = req.headers[n];
    return Array.isArray(v) ? v[0] : v;
  },
});

function readSignIn(body: unknown): { email: string; password: string } {
  const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const errors = [];
  // Checked before the attempt is counted: the counters keep the email, and a body may be megabytes.
  if (typeof b.email !== "string" || b.email.trim() === "") errors.push({ location: "body.email", message: "email is required (a string)." });
  else if (!isEmail(normalizeEmail(b.email))) errors.push({ location: "body.email", message: "email must be an email address of at most 320 characters." });
  if (typeof b.password !== "string" || b.password === "") errors.push({ location: "body.password", message: "password is required (a string)." });
  else if (b.password.length > MAX_PASSWORD_LENGTH)
    errors.push({ location: "body.password", message: `password must be at most ${MAX_PASSWORD_LENGTH} characters.` });
  if (errors.length > 0) throw invalidInput(errors);
  return { email: normalizeEmail(b.email as string), password: b.password as string };
}

function tooManyAttempts(req: FastifyRequest, reply: FastifyReply, config: Config, retryAfter: number) {
  return reply
    .code(429)
    .header("retry-after", String(retryAfter))
    .send({
      meta: { requestId: req.id },
      error: {
        title: "Too Many Requests",
        detail: `Too many sign-in attempts; try again in ${retryAfter} seconds.`,
        status: 429,
        type: `${config.docsBaseUrl}/api-reference/errors-v2/user/too_many_requests`,
      },
    });
}

export function dashboardRoutes(deps: Deps, config: Config) {
  const attempts = new SignInAttempts({
    perEmail: config.dashboardSignInPerEmail,
    perIp: config.dashboardSignInPerIp,
    windowMs: config.dashboardSignInWindowMs,
  });
  const settings = sessionSettings(config);
  // Computed now, so that the first sign-in with an unknown email takes no longer than the others.
  void dummyHash();

  return async function dashboard(app: FastifyInstance): Promise<void> {
    app.addHook("onSend", async (_req, reply) => {
      reply.header("cache-control", "no-store");
    });

    app.post("/dashboard/api/sign-in", async (req, reply) => {
      const h = headersOf(req);
      // Login CSRF: another site must not sign the browser in to an account of its choosing.
      if (!sameOrigin(schemeOf(config, req.protocol), h.get("host"), h.get("origin"), h.get("referer")))
        throw forbidden("The request's Origin does not match the host it was sent to.");
      const { email, password } = readSignIn(req.body);
      const at = deps.clock.now();
      const retryAfter = attempts.take(email, req.ip, at);
      if (retryAfter > 0) return tooManyAttempts(req, reply, config, retryAfter);
      const operator = await findOperatorByEmail(deps.pool, email);
      // An unknown email costs the same scrypt run as a wrong password: the answer tells nothing.
      const ok = await verifyPassword(password, operator?.passwordHash ?? (await dummyHash()));
      const origin = new HttpOrigin(req);
      if (operator === undefined || !ok) {
        // Both kinds of refusal write one record, so the answer still takes as long either way.
        await recordFailedSignIn(deps, operator?.id, origin);
        throw new AppError("err:svc:authentication:key_not_found", "The email or password is wrong.");
      }
      attempts.forgive(email, req.ip, at);
      const token = await startSession(deps, operator.id, settings, origin);
      reply.header("set-cookie", cookie(req, config, token, Math.floor(settings.maxMs / 1000)));
      return sessionBody(deps, token, operator);
    });

    app.get("/dashboard/api/session", async (req) => {
      const token = sessionTokenOf(config, schemeOf(config, req.protocol), headersOf(req).get("cookie"));
      const session = await sessionOf(deps, config, token);
      return sessionBody(deps, token as string, { id: session.operatorId, email: session.email });
    });

    app.post("/dashboard/api/sign-out", async (req, reply) => {
      const h = headersOf(req);
      const token = sessionTokenOf(config, schemeOf(config, req.protocol), h.get("cookie"));
      if (token === undefined) throw new AppError("err:svc:authentication:missing", "Sign in to the dashboard first: no session cookie was sent.");
      checkUnsafe(schemeOf(config, req.protocol), h, token);
      // An unknown or already ended session still gets its cookie cleared; only a session that ended here is recorded.
      await endSession(deps, token, new HttpOrigin(req));
      reply.header("set-cookie", cookie(req, config, "", 0));
      return { signedOut: true };
    });
  };
}
