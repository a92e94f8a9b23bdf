// The dashboard's server side against the real server and database: operator
// sign-in, sessions, sign-out, CSRF and Origin checks, the sign-in rate limit,
// and Connect calls made with a session instead of a root key (never accepted
// by the JSON gateway). Each test signs in from its own client address, so the
// per-address sign-in limit of one test never touches another.
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import type { FastifyInstance } from "fastify";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { DashboardService } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { hashPassword, verifyPassword } from "../../src/domain/operators/password.js";
import { loadConfig } from "../../src/server/config.js";
import { deleteEndedSessions, insertOperator, insertSession, linkWorkspace } from "../../src/storage/operators.js";
import { ensureWorkspace } from "../../src/storage/workspaces.js";
import { uid } from "../contract/shared/helpers.js";
import { call, failure, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { startServer } from "../server-process.js";
import { allOperations } from "./support.js";

const HOST = "dash.test:7070";
const ORIGIN = `http://${HOST}`;
const PASSWORD = "correct horse battery staple";

interface Reply {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
  body: any;
  text: string;
}

let nextIp = 1;
/** A client address of its own for each test. */
const freshIp = () => `10.9.${Math.floor(nextIp / 250)}.${(nextIp++ % 250) + 1}`;

describe("dashboard: operators, sessions, CSRF, session-authenticated Connect calls", () => {
  const h = useHarness();
  let email: string;
  let workspaceId: string;
  let otherWorkspaceId: string;

  async function request(method: "GET" | "POST", url: string, headers: Record<string, string>, body?: unknown, ip = "10.0.0.1"): Promise<Reply> {
    const res = await h.app.inject({
      method,
      url,
      remoteAddress: ip,
      headers: { host: HOST, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body: parsed, text: res.body };
  }

  interface Session {
    token: string;
    cookie: string;
    csrf: string;
    body: Reply["body"];
    setCookie: string;
  }

  async function signIn(who = email, password = PASSWORD, ip = freshIp()): Promise<Session> {
    const res = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: who, password }, ip);
    expect(res.status, res.text).toBe(200);
    const setCookie = String(res.headers["set-cookie"]);
    const token = /keyhold_session=([^;]+)/.exec(setCookie)?.[1] as string;
    return { token, cookie: `keyhold_session=${token}`, csrf: res.body.csrfToken, body: res.body, setCookie };
  }

  /** A Connect call (JSON codec) with a session: cookie, workspace, CSRF token and Origin unless overridden. */
  function rpc(path: string, body: unknown, s: Session | undefined, headers: Record<string, string | undefined> = {}) {
    const base: Record<string, string | undefined> = {
      cookie: s?.cookie,
      "x-keyhold-workspace": workspaceId,
      "x-csrf-token": s?.csrf,
      origin: ORIGIN,
      ...headers,
    };
    const sent = Object.fromEntries(Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined));
    return request("POST", path, sent, body);
  }

  const sessionRows = async (token: string) => {
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM operator_sessions WHERE id = ?", [createHash("sha256").update(token).digest("hex")]);
    return rows.length;
  };

  beforeAll(async () => {
    const now = Date.now();
    email = `${uid("op")}@example.test`;
    const opId = await insertOperator(h.db.pool, { email, passwordHash: await hashPassword(PASSWORD), now });
    workspaceId = h.workspaceId;
    await linkWorkspace(h.db.pool, opId, workspaceId, now);
    // A workspace that exists but this operator was never given.
    otherWorkspaceId = (await ensureWorkspace(h.db.pool, uid("other"), now)).id;
  });

  describe("passwords", () => {
    it("are stored as scrypt strings, never in plaintext, and verify only the right password", async () => {
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT password_hash FROM operators WHERE email = ?", [email]);
      const stored = String(rows[0]?.password_hash);
      expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
      expect(stored).not.toContain(PASSWORD);
      expect(await verifyPassword(PASSWORD, stored)).toBe(true);
      expect(await verifyPassword(`${PASSWORD}!`, stored)).toBe(false);
      // Two hashes of one password differ (a fresh salt each time).
      expect(await hashPassword(PASSWORD)).not.toBe(await hashPassword(PASSWORD));
      // A stored string asking for absurd parameters is refused, not run.
      expect(await verifyPassword(PASSWORD, stored.replace("$32768$", "$1073741824$"))).toBe(false);
    });
  });

  describe("sign-in", () => {
    it("sets an HttpOnly, SameSite=Strict session cookie and returns the operator, workspaces and CSRF token", async () => {
      const s = await signIn();
      expect(s.setCookie).toContain("HttpOnly");
      expect(s.setCookie).toContain("SameSite=Strict");
      expect(s.setCookie).toContain("Path=/");
      // Plain http here, DASHBOARD_COOKIE_SECURE unset (auto): no Secure attribute.
      expect(s.setCookie).not.toContain("Secure");
      expect(Buffer.from(s.token, "base64url")).toHaveLength(32);
      expect(s.body.operator).toEqual({ id: expect.stringMatching(/^op_/), email });
      expect(s.body.workspaces).toEqual([{ id: workspaceId, name: expect.any(String) }]);
      expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(s.csrf).not.toBe(s.token);
      // Stored as its SHA-256 only: the token itself is nowhere in the table.
      expect(await sessionRows(s.token)).toBe(1);
      const [raw] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM operator_sessions WHERE id = ?", [s.token]);
      expect(Number(raw[0]?.n)).toBe(0);
    });

    it("marks the cookie Secure when DASHBOARD_COOKIE_SECURE=true; refuses a bad setting", async () => {
      const secure = await h.otherInstance({ DASHBOARD_COOKIE_SECURE: "true" });
      const res = await secure.app.inject({
        method: "POST",
        url: "/dashboard/api/sign-in",
        remoteAddress: freshIp(),
        // It says a TLS-terminating proxy is in front: the browser's Origin is https.
        headers: { host: HOST, origin: `https://${HOST}`, "content-type": "application/json" },
        payload: JSON.stringify({ email, password: PASSWORD }),
      });
      expect(res.statusCode, res.body).toBe(200);
      const setCookie = String(res.headers["set-cookie"]);
      expect(setCookie).toMatch(/^__Host-keyhold_session=[^;]+; Path=\/;.*; Secure$/);
      expect(setCookie).not.toContain("Domain");
      // Only the __Host- name is read: a plain `keyhold_session` (which a sibling subdomain could set) is not.
      const token = /^__Host-keyhold_session=([^;]+)/.exec(setCookie)?.[1] as string;
      const session = (cookie: string) => secure.app.inject({ method: "GET", url: "/dashboard/api/session", headers: { host: HOST, cookie } });
      expect((await session(`keyhold_session=${token}`)).statusCode).toBe(401);
      expect((await session(`keyhold_session=${token}; __Host-keyhold_session=${token}`)).statusCode).toBe(200);
      expect(() => loadConfig({ DASHBOARD_COOKIE_SECURE: "sometimes" })).toThrow(/DASHBOARD_COOKIE_SECURE/);
    });

    it("keys the per-address limit on X-Forwarded-For only with TRUST_PROXY naming the proxy", async () => {
      const attempt = (app: FastifyInstance, forwardedFor: string) =>
        app.inject({
          method: "POST",
          url: "/dashboard/api/sign-in",
          remoteAddress: "127.0.0.1",
          headers: { host: HOST, origin: ORIGIN, "content-type": "application/json", "x-forwarded-for": forwardedFor },
          payload: JSON.stringify({ email: `${uid("nobody")}@example.test`, password: "whatever-password" }),
        });
      const behindProxy = await h.otherInstance({ TRUST_PROXY: "127.0.0.1", DASHBOARD_SIGNIN_PER_IP: "2" });
      for (let i = 0; i < 2; i++) expect((await attempt(behindProxy.app, "10.8.0.1")).statusCode).toBe(401);
      expect((await attempt(behindProxy.app, "10.8.0.1")).statusCode).toBe(429);
      expect((await attempt(behindProxy.app, "10.8.0.2")).statusCode).toBe(401);
      const direct = await h.otherInstance({ DASHBOARD_SIGNIN_PER_IP: "2" });
      for (let i = 0; i < 2; i++) expect((await attempt(direct.app, `10.8.1.${i}`)).statusCode).toBe(401);
      expect((await attempt(direct.app, "10.8.1.9")).statusCode).toBe(429);
    });

    it("compares the Origin's scheme too: X-Forwarded-Proto under TRUST_PROXY, else plain http", async () => {
      const https = `https://${HOST}`;
      const plain = await request("POST", "/dashboard/api/sign-in", { origin: https }, { email, password: PASSWORD }, freshIp());
      expect(plain.status).toBe(403);
      const proxied = await h.otherInstance({ TRUST_PROXY: "127.0.0.1" });
      const signInVia = (origin: string) =>
        proxied.app.inject({
          method: "POST",
          url: "/dashboard/api/sign-in",
          remoteAddress: "127.0.0.1",
          headers: { host: HOST, origin, "content-type": "application/json", "x-forwarded-proto": "https", "x-forwarded-for": freshIp() },
          payload: JSON.stringify({ email, password: PASSWORD }),
        });
      expect((await signInVia(ORIGIN)).statusCode).toBe(403);
      const res = await signInVia(https);
      expect(res.statusCode, res.body).toBe(200);
      // Came over https (auto): Secure, so __Host-; the Connect door reads the scheme from the same header.
      const token = /^__Host-keyhold_session=([^;]+)/.exec(String(res.headers["set-cookie"]))?.[1] as string;
      const create = (origin: string) =>
        proxied.app.inject({
          method: "POST",
          url: "/keyhold.v2.ApisService/CreateApi",
          remoteAddress: "127.0.0.1",
          headers: {
            host: HOST,
            origin,
            "content-type": "application/json",
            "x-forwarded-proto": "https",
            cookie: `__Host-keyhold_session=${token}`,
            "x-csrf-token": JSON.parse(res.body).csrfToken,
            "x-keyhold-workspace": workspaceId,
          },
          payload: JSON.stringify({ name: "over-https" }),
        });
      expect((await create(ORIGIN)).statusCode).toBe(403);
      const ok = await create(https);
      expect(ok.statusCode, ok.body).toBe(200);
    });

    it("accepts the email in any case", async () => {
      const s = await signIn(email.toUpperCase());
      expect(s.body.operator.email).toBe(email);
    });

    it("answers a wrong password and an unknown email identically (no account enumeration)", async () => {
      const wrong = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email, password: "not the password" }, freshIp());
      const unknown = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: `nobody-${email}`, password: PASSWORD }, freshIp());
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(wrong.headers["set-cookie"]).toBeUndefined();
      expect(wrong.body.error).toEqual(unknown.body.error);
      expect(wrong.body.error.detail).toBe("The email or password is wrong.");
    });

    it("refuses a sign-in from another origin, or with no Origin or Referer (login CSRF)", async () => {
      const ip = freshIp();
      const evil = await request("POST", "/dashboard/api/sign-in", { origin: "https://evil.example" }, { email, password: PASSWORD }, ip);
      expect(evil.status).toBe(403);
      expect(evil.body.error.type).toContain("authorization/forbidden");
      const none = await request("POST", "/dashboard/api/sign-in", {}, { email, password: PASSWORD }, ip);
      expect(none.status).toBe(403);
      expect(evil.headers["set-cookie"]).toBeUndefined();
      // A same-origin Referer stands in for a missing Origin.
      const referer = await request("POST", "/dashboard/api/sign-in", { referer: `${ORIGIN}/dashboard/` }, { email, password: PASSWORD }, ip);
      expect(referer.status, referer.text).toBe(200);
    });

    it("names the bad field with a 400", async () => {
      const res = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: 42 }, freshIp());
      expect(res.status).toBe(400);
      expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual(["body.email", "body.password"]);
      // Refused before the attempt is counted (the counters keep the email) and before any scrypt run.
      const ip = freshIp();
      for (const bad of ["not-an-email", `${"a".repeat(1 << 20)}@example.test`]) {
        const res = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: bad, password: "whatever-password" }, ip);
        expect(res.status).toBe(400);
        expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual(["body.email"]);
      }
      const long = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email, password: "p".repeat(1025) }, ip);
      expect(long.status).toBe(400);
      expect(long.body.error.errors.map((e: { location: string }) => e.location)).toEqual(["body.password"]);
      const garbled = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN, "content-type": "application/json" }, undefined, freshIp());
      expect(garbled.status).toBeGreaterThanOrEqual(400);
      expect(garbled.status).toBeLessThan(500);
    });

    it("limits failed attempts per email: after 10 the next is 429 with Retry-After, even with the right password", async () => {
      const now = Date.now();
      const target = `${uid("limited")}@example.test`;
      await insertOperator(h.db.pool, { email: target, passwordHash: await hashPassword(PASSWORD), now });
      for (let i = 0; i < 10; i++) {
        const res = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: target, password: `wrong-${i}` }, freshIp());
        expect(res.status).toBe(401);
      }
      const limited = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: target, password: PASSWORD }, freshIp());
      expect(limited.status).toBe(429);
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
      expect(limited.body.error).toMatchObject({ status: 429, title: "Too Many Requests" });
      expect(limited.body.meta.requestId).toMatch(/^req_/);
      expect(limited.headers["set-cookie"]).toBeUndefined();
    });

    it("limits failed attempts per client address across emails; successful sign-ins do not count", async () => {
      const ip = freshIp();
      let last: Reply | undefined;
      for (let i = 0; i < 51; i++) {
        last = await request("POST", "/dashboard/api/sign-in", { origin: ORIGIN }, { email: `probe${i}@example.test`, password: "whatever-password" }, ip);
        if (i < 50) expect(last.status).toBe(401);
      }
      expect(last?.status).toBe(429);
      // Another address is not affected.
      await signIn();
    });
  });

  describe("session and sign-out", () => {
    it("GET /dashboard/api/session answers the sign-in body with the cookie, 401 without or with a bad one", async () => {
      const s = await signIn();
      const res = await request("GET", "/dashboard/api/session", { cookie: s.cookie });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual(s.body);
      expect(res.headers["cache-control"]).toBe("no-store");
      expect((await request("GET", "/dashboard/api/session", {})).status).toBe(401);
      expect((await request("GET", "/dashboard/api/session", { cookie: "keyhold_session=abc" })).status).toBe(401);
      const forged = `keyhold_session=${Buffer.alloc(32, 7).toString("base64url")}`;
      expect((await request("GET", "/dashboard/api/session", { cookie: forged })).status).toBe(401);
    });

    it("sign-out needs the CSRF token and same Origin, then ends the session on the server", async () => {
      const s = await signIn();
      const noCsrf = await request("POST", "/dashboard/api/sign-out", { cookie: s.cookie, origin: ORIGIN });
      expect(noCsrf.status).toBe(403);
      const wrongCsrf = await request("POST", "/dashboard/api/sign-out", { cookie: s.cookie, origin: ORIGIN, "x-csrf-token": "x".repeat(43) });
      expect(wrongCsrf.status).toBe(403);
      const wrongOrigin = await request("POST", "/dashboard/api/sign-out", { cookie: s.cookie, origin: "http://evil.example", "x-csrf-token": s.csrf });
      expect(wrongOrigin.status).toBe(403);
      expect(await sessionRows(s.token)).toBe(1);

      const out = await request("POST", "/dashboard/api/sign-out", { cookie: s.cookie, origin: ORIGIN, "x-csrf-token": s.csrf });
      expect(out.status, out.text).toBe(200);
      expect(String(out.headers["set-cookie"])).toMatch(/^keyhold_session=; .*Max-Age=0/);
      expect(await sessionRows(s.token)).toBe(0);
      // The old cookie, replayed, opens nothing.
      expect((await request("GET", "/dashboard/api/session", { cookie: s.cookie })).status).toBe(401);
      expect((await rpc("/keyhold.v2.ApisService/CreateApi", { name: "after-sign-out" }, s)).status).toBe(401);
    });

    it("a session past its absolute end, or idle too long, is refused (401) and deleted", async () => {
      const absolute = await signIn();
      await h.db.pool.query("UPDATE operator_sessions SET expires_at_m = ? WHERE id = ?", [
        Date.now() - 1,
        createHash("sha256").update(absolute.token).digest("hex"),
      ]);
      expect((await request("GET", "/dashboard/api/session", { cookie: absolute.cookie })).status).toBe(401);
      expect(await sessionRows(absolute.token)).toBe(0);

      const idle = await signIn();
      const thirteenHoursAgo = Date.now() - 13 * 3_600_000;
      await h.db.pool.query("UPDATE operator_sessions SET last_seen_at_m = ? WHERE id = ?", [
        thirteenHoursAgo,
        createHash("sha256").update(idle.token).digest("hex"),
      ]);
      expect((await rpc("/keyhold.v2.ApisService/CreateApi", { name: "idle-session" }, idle)).status).toBe(401);
      expect(await sessionRows(idle.token)).toBe(0);
    });
  });

  it("ended sessions (past their end, or idle too long) are swept; live ones stay", async () => {
    const now = Date.now();
    const [opRows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM operators WHERE email = ?", [email]);
    const operatorId = String(opRows[0]?.id);
    const ids = { live: "a".repeat(64), expired: "b".repeat(64), idle: "c".repeat(64) };
    await insertSession(h.db.pool, { id: ids.live, operatorId, now, expiresAt: now + 3_600_000 });
    await insertSession(h.db.pool, { id: ids.expired, operatorId, now: now - 10_000, expiresAt: now - 1 });
    await insertSession(h.db.pool, { id: ids.idle, operatorId, now: now - 13 * 3_600_000, expiresAt: now + 3_600_000 });
    await deleteEndedSessions(h.db.pool, now, 12 * 3_600_000);
    const [left] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM operator_sessions WHERE id IN (?, ?, ?)", Object.values(ids));
    expect(left.map((r) => r.id)).toEqual([ids.live]);
  });

  describe("Connect calls with a session", () => {
    it("create an API in the operator's workspace", async () => {
      const s = await signIn();
      const res = await rpc("/keyhold.v2.ApisService/CreateApi", { name: "from-the-dashboard" }, s);
      expect(res.status, res.text).toBe(200);
      const apiId = res.body.apiId as string;
      const admin = await h.rootKey(["*"]);
      const got = await h.post("/v2/apis.getApi", { apiId }, admin);
      expect(got.status).toBe(200);
      expect(got.body.data.name).toBe("from-the-dashboard");
    });

    it("need the CSRF token, the same Origin, and a cookie", async () => {
      const s = await signIn();
      const path = "/keyhold.v2.ApisService/CreateApi";
      const noCsrf = await rpc(path, { name: "no-csrf" }, s, { "x-csrf-token": undefined });
      expect(noCsrf.status).toBe(403);
      expect(noCsrf.body.code).toBe("permission_denied");
      expect((await rpc(path, { name: "bad-csrf" }, s, { "x-csrf-token": s.csrf.replace(/^./, (c) => (c === "A" ? "B" : "A")) })).status).toBe(403);
      expect((await rpc(path, { name: "evil-origin" }, s, { origin: "http://evil.example" })).status).toBe(403);
      expect((await rpc(path, { name: "no-origin" }, s, { origin: undefined })).status).toBe(403);
      // Another session's CSRF token does not fit this session.
      const other = await signIn();
      expect((await rpc(path, { name: "swapped-csrf" }, s, { "x-csrf-token": other.csrf })).status).toBe(403);
      const none = await rpc(path, { name: "no-session" }, undefined);
      expect(none.status).toBe(401);
      expect(none.body.code).toBe("unauthenticated");
      // None of the refused calls created anything.
      const [rows] = await h.db.pool.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM apis WHERE name IN ('no-csrf', 'bad-csrf', 'evil-origin', 'no-origin', 'swapped-csrf', 'no-session')",
      );
      expect(Number(rows[0]?.n)).toBe(0);
    });

    it("cannot act on a workspace the operator has no access to (same answer as one that does not exist)", async () => {
      const s = await signIn();
      const path = "/keyhold.v2.ApisService/CreateApi";
      const other = await rpc(path, { name: "intruder" }, s, { "x-keyhold-workspace": otherWorkspaceId });
      const unknown = await rpc(path, { name: "intruder" }, s, { "x-keyhold-workspace": "ws_doesnotexist00000000" });
      expect(other.status).toBe(403);
      expect(unknown.status).toBe(403);
      expect(other.body.message).toBe(unknown.body.message);
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM apis WHERE workspace_id = ?", [otherWorkspaceId]);
      expect(Number(rows[0]?.n)).toBe(0);
      const missing = await rpc(path, { name: "which-workspace" }, s, { "x-keyhold-workspace": undefined });
      expect(missing.status, missing.text).toBe(400);
      // (The header's name is cut short by the error redaction, which shortens every long token of an unauthenticated answer.)
      expect(missing.body.message).toContain("must name the workspace to act on");
    });

    it("retries with an Idempotency-Key are replayed for the session's operator", async () => {
      const s = await signIn();
      const key = uid("idem");
      const first = await rpc("/keyhold.v2.ApisService/CreateApi", { name: "idempotent" }, s, { "idempotency-key": key });
      const again = await rpc("/keyhold.v2.ApisService/CreateApi", { name: "idempotent" }, s, { "idempotency-key": key });
      expect(first.status, first.text).toBe(200);
      expect(again.body.apiId).toBe(first.body.apiId);
      expect(again.headers["idempotent-replayed"]).toBe("true");
    });

    it("work from the generated Connect client with the cookie and headers", async () => {
      await h.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = h.app.server.address() as AddressInfo;
      const s = await signIn();
      const origin = `http://127.0.0.1:${port}`;
      const transport = createConnectTransport({
        httpVersion: "1.1",
        baseUrl: origin,
        interceptors: [
          (next) => (req) => {
            req.header.set("cookie", s.cookie);
            req.header.set("origin", origin);
            req.header.set("x-csrf-token", s.csrf);
            if (!req.header.has("x-keyhold-workspace")) req.header.set("x-keyhold-workspace", workspaceId);
            return next(req);
          },
        ],
      });
      const apis = createClient(ApisService, transport);
      const { apiId } = await apis.createApi({ name: "generated-client" });
      expect((await apis.getApi({ apiId })).name).toBe("generated-client");
      try {
        await apis.createApi({ name: "elsewhere" }, { headers: { "x-keyhold-workspace": otherWorkspaceId } });
        expect.unreachable("a workspace without access must be refused");
      } catch (err) {
        expect(err).toBeInstanceOf(ConnectError);
        expect((err as ConnectError).code).toBe(Code.PermissionDenied);
        expect((err as ConnectError).findDetails(ErrorDetailSchema)[0]?.code).toBe("err:svc:authorization:forbidden");
      }
    });
  });

  describe("DashboardService", () => {
    const methods = DashboardService.methods.map((m) => m.name);
    const path = (method: string) => `/keyhold.dashboard.v1.DashboardService/${method}`;

    it("answers 401 to every method without a session, root key or not", async () => {
      const admin = await h.rootKey(["*"]);
      for (const m of methods) {
        const none = await rpc(path(m), { workspaceId }, undefined);
        expect(none.status, `${m} ${none.text}`).toBe(401);
        const withRootKey = await rpc(path(m), { workspaceId }, undefined, { authorization: `Bearer ${admin}` });
        expect(withRootKey.status, `${m} ${withRootKey.text}`).toBe(401);
      }
    });

    it("refuses every method without the CSRF token or from another Origin (403)", async () => {
      const s = await signIn();
      for (const m of methods) {
        expect((await rpc(path(m), { workspaceId }, s, { "x-csrf-token": undefined })).status, m).toBe(403);
        expect((await rpc(path(m), { workspaceId }, s, { origin: "https://evil.example" })).status, m).toBe(403);
      }
      expect((await rpc(path("CreateWorkspace"), { name: "csrf-made-this" }, s, { "x-csrf-token": "" })).status).toBe(403);
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM workspaces WHERE name = 'csrf-made-this'");
      expect(Number(rows[0]?.n)).toBe(0);
    });

    it("cannot touch a workspace the operator does not belong to (same 403 as an unknown one)", async () => {
      const s = await signIn();
      const foreignKey = await h.rootKey(
        ["*"],
        String((await h.db.pool.query<RowDataPacket[]>("SELECT name FROM workspaces WHERE id = ?", [otherWorkspaceId]))[0][0]?.name),
      );
      const [keyRows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM root_keys WHERE workspace_id = ?", [otherWorkspaceId]);
      const foreignKeyId = String(keyRows[0]?.id);
      const bodies: Record<string, unknown> = {
        CreateRootKey: { permissions: ["*"] },
        ListRootKeys: {},
        RevokeRootKey: { keyId: foreignKeyId },
        ListApis: {},
        GetUsage: { from: "0", to: "3600000", granularity: "GRANULARITY_HOUR" },
      };
      for (const [m, body] of Object.entries(bodies)) {
        const other = await rpc(path(m), { ...(body as object), workspaceId: otherWorkspaceId }, s);
        const unknown = await rpc(path(m), { ...(body as object), workspaceId: "ws_doesnotexist00000000" }, s);
        expect(other.status, `${m} ${other.text}`).toBe(403);
        expect(other.body.message).toBe(unknown.body.message);
      }
      // Its own workspace id with another workspace's root key id: not found, and the key still works.
      const cross = await rpc(path("RevokeRootKey"), { workspaceId, keyId: foreignKeyId }, s);
      expect(cross.status).toBe(404);
      expect((await h.post("/v2/apis.createApi", { name: "still-works" }, foreignKey)).status).toBe(200);
      const [after] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM root_keys WHERE workspace_id = ?", [otherWorkspaceId]);
      expect(Number(after[0]?.n)).toBe(1);
      // And it is not listed among the operator's workspaces.
      const listed = await rpc(path("ListWorkspaces"), {}, s);
      expect(listed.body.workspaces.map((w: { id: string }) => w.id)).toEqual([workspaceId]);
    });

    it("refuses every call on a disabled workspace the operator belongs to, as the v2 calls do (403 workspace_disabled)", async () => {
      const now = Date.now();
      const disabled = await ensureWorkspace(h.db.pool, uid("disabled"), now);
      const who = `${uid("disabled-op")}@example.test`;
      await linkWorkspace(h.db.pool, await insertOperator(h.db.pool, { email: who, passwordHash: await hashPassword(PASSWORD), now }), disabled.id, now);
      await h.db.pool.query("UPDATE workspaces SET enabled = FALSE WHERE id = ?", [disabled.id]);
      const s = await signIn(who);
      for (const [m, body] of Object.entries({
        CreateRootKey: { permissions: ["*"] },
        ListRootKeys: {},
        RevokeRootKey: { keyId: "rk_whatever" },
        ListApis: {},
      })) {
        const res = await rpc(path(m), { ...body, workspaceId: disabled.id }, s);
        expect(res.status, `${m} ${res.text}`).toBe(403);
        expect(res.body.message).toContain("disabled");
      }
      const [keys] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM root_keys WHERE workspace_id = ?", [disabled.id]);
      expect(Number(keys[0]?.n)).toBe(0);
    });

    it("is served on Connect only: not in the JSON route table or the services every door serves", async () => {
      const admin = await h.rootKey(["*"]);
      const json = await h.post("/v2/dashboard.listWorkspaces", {}, admin);
      expect(json.status).toBe(404);
      expect(allOperations(h).filter((op) => op.startsWith("dashboard."))).toEqual([]);
    });
  });

  describe("the gRPC port never takes a session", () => {
    it("answers UNAUTHENTICATED to a call with the session cookie, CSRF token and workspace as metadata", async () => {
      const s = await signIn();
      const port = await h.grpcPort();
      const Apis = service(loadServices("apis_service.proto"), "ApisService");
      const client = new Apis(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      try {
        const md = new grpc.Metadata();
        md.set("cookie", s.cookie);
        md.set("x-csrf-token", s.csrf);
        md.set("x-keyhold-workspace", workspaceId);
        md.set("origin", ORIGIN);
        const err = await failure(call(client, "createApi", { name: "grpc-with-session" }, md));
        expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
      } finally {
        client.close();
      }
    });
  });

  describe("the JSON gateway never takes a session", () => {
    it("answers 401 to a /v2 call with a valid session cookie and no root key", async () => {
      const s = await signIn();
      const res = await request(
        "POST",
        "/v2/apis.createApi",
        { cookie: s.cookie, "x-csrf-token": s.csrf, origin: ORIGIN, "x-keyhold-workspace": workspaceId },
        { name: "json-with-session" },
      );
      expect(res.status).toBe(401);
      expect(res.body.error.type).toContain("authentication/missing");
    });
  });

  describe("logs", () => {
    it("never carry the session token, the CSRF token or the password, even at trace level", async () => {
      const server = await startServer(h.config.databaseUrl as string, { LOG_LEVEL: "trace", DASHBOARD_SIGNIN_PER_EMAIL: "1000" });
      try {
        const post = (p: string, body: unknown, headers: Record<string, string>) =>
          fetch(`${server.url}${p}`, {
            method: "POST",
            headers: { "content-type": "application/json", origin: server.url, ...headers },
            body: JSON.stringify(body),
          });
        const res = await post("/dashboard/api/sign-in", { email, password: PASSWORD }, {});
        expect(res.status).toBe(200);
        const token = /keyhold_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1] as string;
        const { csrfToken } = (await res.json()) as { csrfToken: string };
        const session = { cookie: `keyhold_session=${token}`, "x-csrf-token": csrfToken, "x-keyhold-workspace": workspaceId };
        expect((await post("/keyhold.v2.ApisService/CreateApi", { name: "logged" }, session)).status).toBe(200);
        // Failures are logged too: a wrong password, a bad CSRF token, a forged cookie.
        expect((await post("/dashboard/api/sign-in", { email, password: `${PASSWORD}-wrong` }, {})).status).toBe(401);
        expect((await post("/keyhold.v2.ApisService/CreateApi", { name: "x" }, { ...session, "x-csrf-token": "nope" })).status).toBe(403);
        const forged = await fetch(`${server.url}/dashboard/api/session`, { headers: { cookie: `keyhold_session=${token.slice(0, -2)}xx` } });
        expect(forged.status).toBe(401);
        expect((await post("/dashboard/api/sign-out", {}, session)).status).toBe(200);
        const out = server.output();
        expect(out.length).toBeGreaterThan(0);
        for (const secret of [token, token.slice(0, -2), csrfToken, PASSWORD]) expect(out).not.toContain(secret);
      } finally {
        await server.kill();
      }
    });
  });
});
