// The audit records of identities, permissions and roles, rate-limit overrides
// and namespaces, workspaces, operators and dashboard sign-ins: each change made
// through its real door leaves exactly one record (read straight from the
// tables), naming the actor, the resources and the request, and never a secret:
// no password, session token or cookie, root key, meta value or email. A refused
// request (404, 409) leaves none.
import { createHash } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { createOperator } from "../../src/domain/operators/operators.js";
import { hashPassword } from "../../src/domain/operators/password.js";
import { operatorPrincipal } from "../../src/domain/operators/principal.js";
import { createNamespace } from "../../src/domain/ratelimit/namespace-admin.js";
import { insertOperator, linkWorkspace } from "../../src/storage/operators.js";
import { uid } from "../contract/shared/helpers.js";
import { type Res, useHarness } from "../harness.js";

const HOST = "audit.test:7070";
const ORIGIN = `http://${HOST}`;
const PASSWORD = "audit other password";
const META_VALUE = "meta-value-that-must-not-be-logged";

interface AuditRecord {
  pk: number;
  workspace_id: string | null;
  actor_type: string;
  actor_id: string;
  action: string;
  resources: Array<{ type: string; id: string }>;
  description: string;
  request_id: string | null;
  remote_address: string | null;
  user_agent: string | null;
  /** audit_resources' ids for this record, sorted. */
  indexed: string[];
}

let nextIp = 1;
/** A client address of its own per sign-in, so the sign-in limiter never refuses one of these tests. */
const freshIp = () => `10.77.${Math.floor(nextIp / 250)}.${(nextIp++ % 250) + 1}`;

describe("audit records of identities, rbac, rate limits, workspaces, operators and sign-ins", () => {
  const h = useHarness();
  let rk: string;
  let rkId: string;
  let email: string;
  let operatorId: string;

  async function records(where: string, params: (string | number)[]): Promise<AuditRecord[]> {
    const [rows] = await h.db.pool.query<RowDataPacket[]>(`SELECT * FROM audit_logs WHERE ${where} ORDER BY pk`, params);
    const out: AuditRecord[] = [];
    for (const r of rows) {
      const [idx] = await h.db.pool.query<RowDataPacket[]>("SELECT resource_id FROM audit_resources WHERE audit_id = ?", [r.id]);
      out.push({ ...(r as AuditRecord), pk: Number(r.pk), resources: JSON.parse(String(r.resources)), indexed: idx.map((x) => String(x.resource_id)).sort() });
    }
    return out;
  }

  const ofRequest = (requestId: string) => records("request_id = ?", [requestId]);
  /** The records with this action that touched this resource (through the resource index). */
  const touching = (action: string, resourceId: string) =>
    records("action = ? AND id IN (SELECT audit_id FROM audit_resources WHERE resource_id = ?)", [action, resourceId]);

  /** The one record of this request, with this action. */
  async function oneOf(requestId: string, action: string): Promise<AuditRecord> {
    const found = await ofRequest(requestId);
    expect(found.map((r) => r.action)).toEqual([action]);
    return found[0] as AuditRecord;
  }

  /** The whole record (every column) contains none of these. */
  function expectNoSecret(r: AuditRecord, secrets: readonly string[]): void {
    const text = JSON.stringify(r);
    for (const s of secrets) expect(text, "a secret in the audit record").not.toContain(s);
  }

  const totalRecords = async () => Number((await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM audit_logs"))[0][0]?.n);

  const ok = (res: Res) => {
    expect(res.status, res.text).toBe(200);
    return { data: res.body.data, requestId: res.body.meta.requestId as string };
  };

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM root_keys WHERE hash = ?", [hashKey(rk)]);
    rkId = String(rows[0]?.id);
    email = `${uid("auditop")}@example.test`;
    operatorId = await insertOperator(h.db.pool, { email, passwordHash: await hashPassword(PASSWORD), now: Date.now() });
    await linkWorkspace(h.db.pool, operatorId, h.workspaceId, Date.now());
  });

  /** Root-key records: in the key's workspace, with the key as actor. */
  function expectRootKeyActor(r: AuditRecord): void {
    expect(r).toMatchObject({ workspace_id: h.workspaceId, actor_type: "root_key", actor_id: rkId });
    expectNoSecret(r, [rk]);
  }

  describe("identities", () => {
    it("create, update and delete each leave one record naming the identity and the fields, never a meta value", async () => {
      const created = ok(
        await h.post(
          "/v2/identities.createIdentity",
          { externalId: uid("ext"), meta: { secret: META_VALUE }, ratelimits: [{ name: "per-user", limit: 5, duration: 60_000 }] },
          rk,
        ),
      );
      const identityId = created.data.identityId as string;
      const c = await oneOf(created.requestId, "identity.create");
      expectRootKeyActor(c);
      expect(c.resources).toEqual([{ type: "identity", id: identityId }]);
      expect(c.indexed).toEqual([identityId]);
      expect(c.description).toContain("meta");
      expect(c.description).toContain("ratelimits");
      expectNoSecret(c, [META_VALUE, "per-user"]);

      const updated = ok(await h.post("/v2/identities.updateIdentity", { identity: identityId, meta: { other: META_VALUE } }, rk));
      const u = await oneOf(updated.requestId, "identity.update");
      expectRootKeyActor(u);
      expect(u.resources).toEqual([{ type: "identity", id: identityId }]);
      expect(u.description).toContain("meta");
      expect(u.description).not.toContain("ratelimits");
      expectNoSecret(u, [META_VALUE]);

      const deleted = ok(await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk));
      const d = await oneOf(deleted.requestId, "identity.delete");
      expectRootKeyActor(d);
      expect(d.resources).toEqual([{ type: "identity", id: identityId }]);
    });
  });

  describe("permissions and roles", () => {
    it("createPermission and deletePermission each leave one record", async () => {
      const created = ok(await h.post("/v2/permissions.createPermission", { name: "Read docs", slug: uid("docs.read"), description: "d" }, rk));
      const permissionId = created.data.permissionId as string;
      const c = await oneOf(created.requestId, "permission.create");
      expectRootKeyActor(c);
      expect(c.resources).toEqual([{ type: "permission", id: permissionId }]);
      expect(c.description).toContain("description");

      const deleted = ok(await h.post("/v2/permissions.deletePermission", { permission: permissionId }, rk));
      const d = await oneOf(deleted.requestId, "permission.delete");
      expectRootKeyActor(d);
      expect(d.resources).toEqual([{ type: "permission", id: permissionId }]);
    });

    it("createRole records the permissions it had to create, both in their own record and in the role's", async () => {
      const existing = uid("perm.existing");
      const existingId = ok(await h.post("/v2/permissions.createPermission", { name: existing, slug: existing }, rk)).data.permissionId as string;
      const missing = [uid("perm.a"), uid("perm.b")];
      const created = ok(await h.post("/v2/permissions.createRole", { name: uid("role"), permissions: [existing, ...missing] }, rk));
      const roleId = created.data.roleId as string;
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM permissions WHERE slug IN (?, ?) ORDER BY id", missing);
      const newIds = rows.map((r) => String(r.id)).sort();
      expect(newIds).toHaveLength(2);

      // Two records for the one request: the permissions were committed before the role (see roles.ts).
      const all = await ofRequest(created.requestId);
      expect(all.map((r) => r.action)).toEqual(["permission.create", "role.create"]);
      const [perms, role] = all as [AuditRecord, AuditRecord];
      for (const r of all) expectRootKeyActor(r);
      expect(perms.resources.map((x) => x.id).sort()).toEqual(newIds);
      expect(perms.resources.every((x) => x.type === "permission")).toBe(true);
      expect(role.resources[0]).toEqual({ type: "role", id: roleId });
      expect(
        role.resources
          .slice(1)
          .map((x) => x.id)
          .sort(),
      ).toEqual(newIds);
      expect(role.indexed).toEqual([roleId, ...newIds].sort());
      expect(role.indexed).not.toContain(existingId);
      expect(role.description).toContain("2 of its permissions did not exist and were created");

      // Every slug exists now: a second role creates no permission and says so.
      const again = ok(await h.post("/v2/permissions.createRole", { name: uid("role"), permissions: missing }, rk));
      const r2 = await oneOf(again.requestId, "role.create");
      expect(r2.resources).toEqual([{ type: "role", id: again.data.roleId }]);
      expect(r2.description).not.toContain("were created");

      const deleted = ok(await h.post("/v2/permissions.deleteRole", { role: roleId }, rk));
      const d = await oneOf(deleted.requestId, "role.delete");
      expectRootKeyActor(d);
      expect(d.resources).toEqual([{ type: "role", id: roleId }]);
    });
  });

  describe("rate limits", () => {
    it("ratelimit.limit records the namespace it creates on first use, and nothing on later uses", async () => {
      const name = uid("ns");
      const first = ok(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "u1", limit: 5, duration: 60_000 }, rk));
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
      const namespaceId = String(rows[0]?.id);
      const c = await oneOf(first.requestId, "ratelimit_namespace.create");
      expectRootKeyActor(c);
      expect(c.resources).toEqual([{ type: "ratelimit_namespace", id: namespaceId }]);

      const later = ok(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "u2", limit: 5, duration: 60_000 }, rk));
      expect(await ofRequest(later.requestId)).toEqual([]);
    });

    it("setOverride (created, then re-set) and deleteOverride each leave one record naming the override and its namespace", async () => {
      const name = uid("ns");
      ok(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, rk));
      const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
      const namespaceId = String(rows[0]?.id);
      const identifier = "customer-identifier@example.test";

      const set = ok(await h.post("/v2/ratelimit.setOverride", { namespace: name, identifier, limit: 7, duration: 30_000 }, rk));
      const overrideId = set.data.overrideId as string;
      const resources = [
        { type: "ratelimit_override", id: overrideId },
        { type: "ratelimit_namespace", id: namespaceId },
      ];
      const s1 = await oneOf(set.requestId, "ratelimit_override.set");
      expectRootKeyActor(s1);
      expect(s1.resources).toEqual(resources);
      expect(s1.indexed).toEqual([namespaceId, overrideId].sort());
      expect(s1.description).toMatch(/^Created/);
      expectNoSecret(s1, [identifier]);

      const reset = ok(await h.post("/v2/ratelimit.setOverride", { namespace: namespaceId, identifier, limit: 9, duration: 30_000 }, rk));
      expect(reset.data.overrideId).toBe(overrideId);
      const s2 = await oneOf(reset.requestId, "ratelimit_override.set");
      expect(s2.resources).toEqual(resources);
      expect(s2.description).toMatch(/^Set/);

      const deleted = ok(await h.post("/v2/ratelimit.deleteOverride", { namespace: name, identifier }, rk));
      const d = await oneOf(deleted.requestId, "ratelimit_override.delete");
      expectRootKeyActor(d);
      expect(d.resources).toEqual(resources);
    });
  });

  it("a refused change (404, 409) leaves no record", async () => {
    const before = await totalRecords();
    const refused: Res[] = [];
    refused.push(await h.post("/v2/identities.deleteIdentity", { identity: "id_doesnotexist" }, rk));
    refused.push(await h.post("/v2/identities.updateIdentity", { identity: "id_doesnotexist", meta: {} }, rk));
    const ext = uid("dup");
    ok(await h.post("/v2/identities.createIdentity", { externalId: ext }, rk));
    refused.push(await h.post("/v2/identities.createIdentity", { externalId: ext }, rk));
    const slug = uid("dup.slug");
    ok(await h.post("/v2/permissions.createPermission", { name: slug, slug }, rk));
    refused.push(await h.post("/v2/permissions.createPermission", { name: slug, slug }, rk));
    refused.push(await h.post("/v2/permissions.deletePermission", { permission: "perm_doesnotexist" }, rk));
    const role = uid("dup-role");
    ok(await h.post("/v2/permissions.createRole", { name: role }, rk));
    refused.push(await h.post("/v2/permissions.createRole", { name: role, permissions: [uid("never.created")] }, rk));
    refused.push(await h.post("/v2/permissions.deleteRole", { role: "role_doesnotexist" }, rk));
    refused.push(await h.post("/v2/ratelimit.deleteOverride", { namespace: "ns-doesnotexist", identifier: "x" }, rk));
    expect(refused.map((r) => r.status)).toEqual([404, 404, 409, 409, 404, 409, 404, 404]);
    for (const r of refused) expect(await ofRequest(r.body.meta.requestId)).toEqual([]);
    // The three successful set-up requests, and nothing else.
    expect(await totalRecords()).toBe(before + 3);
  });

  describe("dashboard", () => {
    async function request(url: string, headers: Record<string, string>, body: unknown, ip: string): Promise<Res> {
      const res = await h.app.inject({
        method: "POST",
        url,
        remoteAddress: ip,
        headers: { host: HOST, "content-type": "application/json", "user-agent": "audit-test/1.0", ...headers },
        payload: JSON.stringify(body),
      });
      let parsed: unknown;
      try {
        parsed = JSON.parse(res.body);
      } catch {
        parsed = undefined;
      }
      return { status: res.statusCode, headers: res.headers, body: parsed, text: res.body };
    }

    const requestIdOf = (res: Res) => String(res.headers["x-request-id"]);

    async function signIn(who = email, password = PASSWORD, ip = freshIp()) {
      const res = await request("/dashboard/api/sign-in", { origin: ORIGIN }, { email: who, password }, ip);
      const setCookie = String(res.headers["set-cookie"] ?? "");
      const token = /keyhold_session=([^;]+)/.exec(setCookie)?.[1] ?? "";
      return { res, ip, token, cookie: `keyhold_session=${token}`, csrf: res.body?.csrfToken as string };
    }

    type Session = Awaited<ReturnType<typeof signIn>>;
    const rpc = (method: string, body: unknown, s: Session) =>
      request(`/keyhold.dashboard.v1.DashboardService/${method}`, { cookie: s.cookie, "x-csrf-token": s.csrf, origin: ORIGIN }, body, s.ip);

    /** Nothing a sign-in handles that could open an account or a session. */
    const secretsOf = (s: Session) => [PASSWORD, s.token, createHash("sha256").update(s.token).digest("hex"), s.csrf, email];

    it("a sign-in records operator.sign_in outside any workspace, with the request's id, address and user agent", async () => {
      const s = await signIn();
      expect(s.res.status, s.res.text).toBe(200);
      const r = await oneOf(requestIdOf(s.res), "operator.sign_in");
      expect(r).toMatchObject({
        workspace_id: null,
        actor_type: "operator",
        actor_id: operatorId,
        remote_address: s.ip,
        user_agent: "audit-test/1.0",
      });
      expect(r.resources).toEqual([{ type: "operator", id: operatorId }]);
      expectNoSecret(r, secretsOf(s));
    });

    it("a wrong password records operator.sign_in_failed for the operator; an unknown email for 'unknown'; neither the password nor the email", async () => {
      const wrongPassword = "not the password at all";
      const wrong = await signIn(email, wrongPassword);
      expect(wrong.res.status).toBe(401);
      const w = await oneOf(requestIdOf(wrong.res), "operator.sign_in_failed");
      expect(w).toMatchObject({ workspace_id: null, actor_type: "operator", actor_id: operatorId, remote_address: wrong.ip });
      expect(w.resources).toEqual([{ type: "operator", id: operatorId }]);
      expectNoSecret(w, [wrongPassword, PASSWORD, email]);

      const stranger = `${uid("nobody")}@example.test`;
      const unknown = await signIn(stranger, wrongPassword);
      expect(unknown.res.status).toBe(401);
      const u = await oneOf(requestIdOf(unknown.res), "operator.sign_in_failed");
      expect(u).toMatchObject({ workspace_id: null, actor_type: "operator", actor_id: "unknown" });
      expect(u.resources).toEqual([{ type: "operator", id: "unknown" }]);
      expect(u.indexed).toEqual(["unknown"]);
      expectNoSecret(u, [wrongPassword, stranger]);
    });

    it("a sign-out records operator.sign_out; signing out again with the ended session records nothing", async () => {
      const s = await signIn();
      const headers = { cookie: s.cookie, "x-csrf-token": s.csrf, origin: ORIGIN };
      const out = await request("/dashboard/api/sign-out", headers, {}, s.ip);
      expect(out.status, out.text).toBe(200);
      const r = await oneOf(requestIdOf(out), "operator.sign_out");
      expect(r).toMatchObject({ workspace_id: null, actor_type: "operator", actor_id: operatorId, remote_address: s.ip });
      expect(r.resources).toEqual([{ type: "operator", id: operatorId }]);
      expectNoSecret(r, secretsOf(s));

      const again = await request("/dashboard/api/sign-out", headers, {}, s.ip);
      expect(again.status).toBe(200);
      expect(await ofRequest(requestIdOf(again))).toEqual([]);
    });

    it("CreateWorkspace records workspace.create in the new workspace, made by the operator; a taken name records nothing", async () => {
      const s = await signIn();
      const name = uid("audited-ws");
      const res = await rpc("CreateWorkspace", { name }, s);
      expect(res.status, res.text).toBe(200);
      const wsId = res.body.workspace.id as string;
      const found = await records("workspace_id = ? AND action = 'workspace.create'", [wsId]);
      expect(found).toHaveLength(1);
      const r = found[0] as AuditRecord;
      expect(r).toMatchObject({ actor_type: "operator", actor_id: operatorId });
      // The dashboard door passes the request on: its id and where it came from.
      expect(String(r.request_id)).toMatch(/^req_/);
      expect(r.remote_address).not.toBeNull();
      expect(r.resources).toEqual([
        { type: "workspace", id: wsId },
        { type: "operator", id: operatorId },
      ]);
      expectNoSecret(r, secretsOf(s));

      const before = await totalRecords();
      const dup = await rpc("CreateWorkspace", { name }, s);
      expect(dup.body.code, dup.text).toBe("failed_precondition");
      expect(await totalRecords()).toBe(before);
    });

    it("CreateNamespace and DeleteNamespace record ratelimit_namespace.create and .delete in the workspace", async () => {
      const s = await signIn();
      const created = await rpc("CreateNamespace", { workspaceId: h.workspaceId, name: uid("dash-ns") }, s);
      expect(created.status, created.text).toBe(200);
      const namespaceId = created.body.namespace.id as string;
      const c = await touching("ratelimit_namespace.create", namespaceId);
      expect(c).toHaveLength(1);
      expect(c[0]?.workspace_id).toBe(h.workspaceId);
      expect(c[0]?.resources).toEqual([{ type: "ratelimit_namespace", id: namespaceId }]);
      expect(c[0]).toMatchObject({ actor_type: "operator", actor_id: operatorId });
      expect(String(c[0]?.request_id)).toMatch(/^req_/);
      expectNoSecret(c[0] as AuditRecord, secretsOf(s));

      const deleted = await rpc("DeleteNamespace", { workspaceId: h.workspaceId, namespaceId }, s);
      expect(deleted.status, deleted.text).toBe(200);
      const d = await touching("ratelimit_namespace.delete", namespaceId);
      expect(d).toHaveLength(1);
      expect(d[0]?.workspace_id).toBe(h.workspaceId);
      expect(d[0]).toMatchObject({ actor_type: "operator", actor_id: operatorId });
      expect(String(d[0]?.request_id)).toMatch(/^req_/);

      const before = await totalRecords();
      const again = await rpc("DeleteNamespace", { workspaceId: h.workspaceId, namespaceId }, s);
      expect(again.body.code, again.text).toBe("not_found");
      expect(await totalRecords()).toBe(before);
    });

    // The domain function with an origin given directly: every field of it lands in the record.
    it("createNamespace with the operator's principal names the operator and the request", async () => {
      const origin = { requestId: "req_audit_namespace", remoteAddress: "10.1.2.3", userAgent: "ua" };
      const ns = await createNamespace(h.deps, h.workspaceId, uid("ns-domain"), { ...operatorPrincipal(operatorId, h.workspaceId), origin });
      const r = await oneOf(origin.requestId, "ratelimit_namespace.create");
      expect(r).toMatchObject({ workspace_id: h.workspaceId, actor_type: "operator", actor_id: operatorId, remote_address: "10.1.2.3" });
      expect(r.resources).toEqual([{ type: "ratelimit_namespace", id: ns.id }]);
    });
  });

  describe("operators (the admin CLI's operation)", () => {
    it("createOperator records operator.create by the CLI in the workspace it joins, and workspace.create for a workspace it makes", async () => {
      const who = `${uid("cliop")}@example.test`;
      const passwordHash = await hashPassword(PASSWORD);
      const wsName = uid("cli-ws");
      const before = await totalRecords();
      const made = await createOperator({ pool: h.db.pool, clock: h.deps.clock }, { email: who, passwordHash, workspace: wsName });
      const wsId = made.workspaceId as string;
      expect(await totalRecords()).toBe(before + 2);

      const [op] = await touching("operator.create", made.operatorId);
      // In the workspace it joins, whose log then shows its new member.
      expect(op).toMatchObject({ workspace_id: wsId, actor_type: "system", actor_id: "cli", request_id: null });
      expect(op?.resources).toEqual([
        { type: "operator", id: made.operatorId },
        { type: "workspace", id: wsId },
      ]);
      expectNoSecret(op as AuditRecord, [who, passwordHash, PASSWORD]);

      const ws = await records("workspace_id = ? AND action = 'workspace.create'", [wsId]);
      expect(ws).toHaveLength(1);
      expect(ws[0]).toMatchObject({ actor_type: "system", actor_id: "cli" });

      // An existing workspace is joined, not recorded as created; a taken email records nothing.
      const second = await createOperator({ pool: h.db.pool, clock: h.deps.clock }, { email: `${uid("cliop")}@example.test`, passwordHash, workspace: wsName });
      expect(second.workspaceId).toBe(wsId);
      expect(await records("workspace_id = ? AND action = 'workspace.create'", [wsId])).toHaveLength(1);
      const afterSecond = await totalRecords();
      await expect(createOperator({ pool: h.db.pool, clock: h.deps.clock }, { email: who, passwordHash })).rejects.toThrow();
      expect(await totalRecords()).toBe(afterSecond);
    });
  });

  it("every record of this file's root key is in its workspace and names the key, never the secret", async () => {
    const all = await records("actor_id = ?", [rkId]);
    expect(all.length).toBeGreaterThan(10);
    for (const r of all) expectRootKeyActor(r);
  });
});
