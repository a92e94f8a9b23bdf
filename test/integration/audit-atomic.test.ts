// A change and its audit record commit together or not at all. The record's
// insert is made to fail for real (a CHECK constraint on audit_logs that no
// record meets), and every kind of change must then answer 500 and leave the
// database as it was; with the constraint gone the same calls succeed and are
// recorded.
import { beforeAll, describe, expect, it } from "vitest";
import { admin, createApi, createKey, expectError, expectOk, type Json, uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

type Rows = Array<Record<string, unknown>>;

describe("the audit record is part of the change's transaction", () => {
  const h = useHarness();
  let rk: string;
  let apiId: string;
  let keyId: string;
  let rootKeyId: string;
  let roleId: string;

  /** A snapshot of every table a change below could touch, audit log excluded. */
  async function snapshot(): Promise<string> {
    const tables = [
      "apis",
      "`keys`",
      "encrypted_keys",
      "identities",
      "permissions",
      "roles",
      "keys_permissions",
      "keys_roles",
      "roles_permissions",
      "ratelimits",
      "root_keys",
      "ratelimit_namespaces",
      "ratelimit_overrides",
    ];
    const out: Record<string, Rows> = {};
    for (const t of tables) {
      // last_used_at_m is written behind by authentication itself, not by the changes.
      const [rows] = await h.db.pool.query(`SELECT * FROM ${t} ORDER BY 1`);
      out[t] = (rows as Rows).map(({ last_used_at_m: _l, ...rest }) => rest);
    }
    return JSON.stringify(out);
  }

  const auditCount = async (): Promise<number> => Number(((await h.db.pool.query("SELECT COUNT(*) AS n FROM audit_logs"))[0] as Rows)[0]?.n);

  beforeAll(async () => {
    rk = await admin(h);
    apiId = await createApi(h, uid("api"), rk);
    keyId = (await createKey(h, apiId, { name: "before" }, rk)).keyId;
    const created = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, rk));
    rootKeyId = created.keyId;
    // A role whose permissions are then replaced by existing ones, so the role's own transaction is the one that fails.
    roleId = expectOk(await h.post("/v2/permissions.createRole", { name: "atomic-role", permissions: ["atomic.one", "atomic.two"] }, rk)).roleId;
    expectOk(await h.post("/v2/permissions.setRolePermissions", { roleId, permissions: ["atomic.one"] }, rk));
  });

  // In an order that works when they succeed: each leaves the next something to change.
  const changes: Array<[string, () => Record<string, unknown>]> = [
    ["/v2/apis.createApi", () => ({ name: "made-once" })],
    ["/v2/keys.createKey", () => ({ apiId, name: "made-once" })],
    // Its limits and its ciphertext go in the same round trip as the key and the record.
    ["/v2/keys.createKey", () => ({ apiId, name: "made-once-too", recoverable: true, ratelimits: [{ name: "requests", limit: 5, duration: 1000 }] })],
    ["/v2/keys.updateKey", () => ({ keyId, name: "renamed", meta: { a: 1 } })],
    ["/v2/keys.updateCredits", () => ({ keyId, operation: "set", value: 5 })],
    ["/v2/keys.addPermissions", () => ({ keyId, permissions: ["added.once"] })],
    ["/v2/keys.rerollKey", () => ({ keyId, expiration: 60_000 })],
    ["/v2/keys.deleteKey", () => ({ keyId })],
    ["/v2/identities.createIdentity", () => ({ externalId: "made-once" })],
    ["/v2/permissions.createPermission", () => ({ name: "made.once", slug: "made.once" })],
    ["/v2/permissions.createRole", () => ({ name: "made-once" })],
    ["/v2/permissions.setRolePermissions", () => ({ roleId, permissions: ["atomic.two"] })],
    ["/v2/rootKeys.createRootKey", () => ({ permissions: ["apis.*.read_api"] })],
    ["/v2/rootKeys.updateRootKey", () => ({ keyId: rootKeyId, enabled: false })],
    ["/v2/rootKeys.rotateRootKey", () => ({ keyId: rootKeyId, gracePeriodMs: 60_000 })],
    ["/v2/rootKeys.deleteRootKey", () => ({ keyId: rootKeyId })],
    ["/v2/apis.deleteApi", () => ({ apiId })],
  ];

  it("with the record's insert failing, every change answers 500 and changes nothing", async () => {
    // Met by every record written so far (the server checks them when the constraint is added), by no new one.
    await h.db.pool.query(`ALTER TABLE audit_logs ADD CONSTRAINT audit_always_fails CHECK (time_m < ${Date.now()})`);
    try {
      const before = await snapshot();
      const records = await auditCount();
      for (const [path, body] of changes) {
        const res = await h.post(path, body(), rk);
        expectError(h, res, 500, "err:svc:application:unexpected_error");
        expect(await snapshot(), `${path} changed the database without its audit record`).toBe(before);
      }
      expect(await auditCount()).toBe(records);
    } finally {
      await h.db.pool.query("ALTER TABLE audit_logs DROP CONSTRAINT audit_always_fails");
    }
  });

  it("with the insert working again, the same changes succeed and each is recorded", async () => {
    for (const [path, body] of changes) {
      const records = await auditCount();
      const res = await h.post(path, body(), rk);
      const data: Json = expectOk(res);
      expect(data, path).toBeDefined();
      expect(await auditCount(), `${path} wrote no record`).toBeGreaterThan(records);
      const [last] = await h.db.pool.query("SELECT request_id FROM audit_logs ORDER BY pk DESC LIMIT 1");
      expect((last as Rows)[0]?.request_id, path).toBe(res.body.meta.requestId);
    }
  });
});
