// Every changing operation of every service leaves its audit record, naming the
// root key that called, the request, and what it touched. The list of
// operations comes from the services themselves: a new RPC must be named here
// as read-only or get a request below, or this test fails.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import { insertKeyMigration } from "../../src/storage/key-migrations.js";
import { expectOk, type Json, uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { allOperations } from "../security/support.js";

type Rows = Array<Record<string, unknown>>;

/** Operations that change nothing a person manages: reads, and the hot path (verification, rate limiting). */
const READ_ONLY = new Set([
  "apis.getApi",
  "apis.listKeys",
  "keys.verifyKey",
  "keys.getKey",
  "keys.whoami",
  "keys.listKeys",
  "identities.getIdentity",
  "identities.listIdentities",
  "ratelimit.limit",
  "ratelimit.multiLimit",
  "ratelimit.getOverride",
  "ratelimit.listOverrides",
  "permissions.getPermission",
  "permissions.listPermissions",
  "permissions.getRole",
  "permissions.listRoles",
  "rootKeys.listRootKeys",
  "auditLogs.listLogs",
  "analytics.getVerifications",
  "analytics.getRatelimits",
]);

describe("every changing operation is in the audit log", () => {
  const h = useHarness();
  let rk: string;
  let rootKeyId: string;
  let apiId: string;

  const ok = async (path: string, body: unknown): Promise<Json> => expectOk(await h.post(path, body, rk), { pagination: /\.list/.test(path) });
  const newKey = async (fields: Record<string, unknown> = {}): Promise<string> => (await ok("/v2/keys.createKey", { apiId, ...fields })).keyId;

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    const [rows] = await h.db.pool.query("SELECT id FROM root_keys WHERE workspace_id = ? ORDER BY pk DESC LIMIT 1", [h.workspaceId]);
    rootKeyId = String((rows as Rows)[0]?.id);
    apiId = (await ok("/v2/apis.createApi", { name: "walk" })).apiId;
    await ok("/v2/permissions.createPermission", { name: "walk.p", slug: "walk.p" });
    await ok("/v2/permissions.createRole", { name: "walk-role" });
    await ok("/v2/ratelimit.limit", { namespace: "walk-ns", identifier: "x", limit: 10, duration: 60_000 });
  });

  /** A valid request of each changing operation, and the action and resource id its record must show. */
  const requests: Record<string, () => Promise<{ body: unknown; action: string; resource: (data: Json, body: Json) => string }>> = {
    "apis.createApi": async () => ({ body: { name: uid("api") }, action: "api.create", resource: (d) => d.apiId }),
    "apis.deleteApi": async () => {
      const id = (await ok("/v2/apis.createApi", { name: uid("api") })).apiId;
      return { body: { apiId: id }, action: "api.delete", resource: () => id };
    },
    "keys.createKey": async () => ({ body: { apiId, meta: { secret: "walk-secret" } }, action: "key.create", resource: (d) => d.keyId }),
    "keys.updateKey": async () => {
      const keyId = await newKey();
      return { body: { keyId, name: "n", meta: { secret: "walk-secret" } }, action: "key.update", resource: () => keyId };
    },
    "keys.updateCredits": async () => {
      const keyId = await newKey({ credits: { remaining: 10 } });
      return { body: { keyId, operation: "increment", value: 5 }, action: "key.update_credits", resource: () => keyId };
    },
    "keys.deleteKey": async () => {
      const keyId = await newKey();
      return { body: { keyId }, action: "key.delete", resource: () => keyId };
    },
    "keys.rerollKey": async () => {
      const keyId = await newKey();
      return { body: { keyId, expiration: 0 }, action: "key.reroll", resource: (d) => d.keyId };
    },
    "keys.addPermissions": async () => {
      const keyId = await newKey();
      return { body: { keyId, permissions: ["walk.p"] }, action: "key.add_permissions", resource: () => keyId };
    },
    "keys.removePermissions": async () => {
      const keyId = await newKey({ permissions: ["walk.p"] });
      return { body: { keyId, permissions: ["walk.p"] }, action: "key.remove_permissions", resource: () => keyId };
    },
    "keys.setPermissions": async () => {
      const keyId = await newKey();
      return { body: { keyId, permissions: ["walk.p"] }, action: "key.set_permissions", resource: () => keyId };
    },
    "keys.addRoles": async () => {
      const keyId = await newKey();
      return { body: { keyId, roles: ["walk-role"] }, action: "key.add_roles", resource: () => keyId };
    },
    "keys.removeRoles": async () => {
      const keyId = await newKey({ roles: ["walk-role"] });
      return { body: { keyId, roles: ["walk-role"] }, action: "key.remove_roles", resource: () => keyId };
    },
    "keys.setRoles": async () => {
      const keyId = await newKey();
      return { body: { keyId, roles: ["walk-role"] }, action: "key.set_roles", resource: () => keyId };
    },
    "keys.migrateKeys": async () => {
      const migrationId = newId("mig");
      await insertKeyMigration(h.db.pool, { id: migrationId, workspaceId: h.workspaceId, algorithm: "sha256", createdAt: Date.now() });
      const hash = createHash("sha256")
        .update(bs58.encode(randomBytes(16)))
        .digest("base64");
      return { body: { migrationId, apiId, keys: [{ hash }] }, action: "key.migrate", resource: (d) => d.migrated[0].keyId };
    },
    "identities.createIdentity": async () => ({ body: { externalId: uid("user") }, action: "identity.create", resource: (d) => d.identityId }),
    "identities.updateIdentity": async () => {
      const id = (await ok("/v2/identities.createIdentity", { externalId: uid("user") })).identityId;
      return { body: { identity: id, meta: { secret: "walk-secret" } }, action: "identity.update", resource: () => id };
    },
    "identities.deleteIdentity": async () => {
      const id = (await ok("/v2/identities.createIdentity", { externalId: uid("user") })).identityId;
      return { body: { identity: id }, action: "identity.delete", resource: () => id };
    },
    "ratelimit.setOverride": async () => ({
      body: { namespace: "walk-ns", identifier: uid("who"), limit: 5, duration: 60_000 },
      action: "ratelimit_override.set",
      resource: (d) => d.overrideId,
    }),
    "ratelimit.deleteOverride": async () => {
      const identifier = uid("who");
      const { overrideId } = await ok("/v2/ratelimit.setOverride", { namespace: "walk-ns", identifier, limit: 5, duration: 60_000 });
      return { body: { namespace: "walk-ns", identifier }, action: "ratelimit_override.delete", resource: () => overrideId };
    },
    "permissions.createPermission": async () => {
      const slug = uid("p").replace("_", ".");
      return { body: { name: slug, slug }, action: "permission.create", resource: (d) => d.permissionId };
    },
    "permissions.deletePermission": async () => {
      const slug = uid("p").replace("_", ".");
      const id = (await ok("/v2/permissions.createPermission", { name: slug, slug })).permissionId;
      return { body: { permission: id }, action: "permission.delete", resource: () => id };
    },
    "permissions.createRole": async () => ({ body: { name: uid("role") }, action: "role.create", resource: (d) => d.roleId }),
    "permissions.deleteRole": async () => {
      const id = (await ok("/v2/permissions.createRole", { name: uid("role") })).roleId;
      return { body: { role: id }, action: "role.delete", resource: () => id };
    },
    "permissions.setRolePermissions": async () => {
      // An existing slug: a new one would add its own permission.create record to the request.
      const id = (await ok("/v2/permissions.createRole", { name: uid("role") })).roleId;
      return { body: { roleId: id, permissions: ["walk.p"] }, action: "role.set_permissions", resource: () => id };
    },
    "rootKeys.createRootKey": async () => ({ body: { permissions: ["apis.*.read_api"] }, action: "root_key.create", resource: (d) => d.keyId }),
    "rootKeys.updateRootKey": async () => {
      const id = (await ok("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] })).keyId;
      return { body: { keyId: id, enabled: false }, action: "root_key.update", resource: () => id };
    },
    "rootKeys.rotateRootKey": async () => {
      const id = (await ok("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] })).keyId;
      return { body: { keyId: id, gracePeriodMs: 1_000 }, action: "root_key.rotate", resource: (d) => d.keyId };
    },
    "rootKeys.deleteRootKey": async () => {
      const id = (await ok("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] })).keyId;
      return { body: { keyId: id }, action: "root_key.delete", resource: () => id };
    },
  };

  it("every RPC is either read-only or has a request here", () => {
    const ops = allOperations(h);
    expect(ops.filter((op) => !READ_ONLY.has(op) && requests[op] === undefined)).toEqual([]);
    expect(Object.keys(requests).filter((op) => !ops.includes(op))).toEqual([]);
  });

  it.each(Object.keys(requests))("%s: one record, by the calling root key, for the request, naming what it touched", async (op) => {
    const build = requests[op];
    if (build === undefined) throw new Error(op);
    const req = await build();
    const [before] = await h.db.pool.query("SELECT COALESCE(MAX(pk), 0) AS pk FROM audit_logs");
    const from = Number((before as Rows)[0]?.pk);
    const res = await h.post(`/v2/${op}`, req.body, rk, { "user-agent": "walk-test/1.0" });
    const data = expectOk(res);
    const [rows] = await h.db.pool.query("SELECT * FROM audit_logs WHERE pk > ? AND request_id = ?", [from, res.body.meta.requestId]);
    const records = rows as Rows;
    expect(records.map((r) => r.action)).toEqual([req.action]);
    const record = records[0] as Record<string, unknown>;
    expect(record).toMatchObject({ workspace_id: h.workspaceId, actor_type: "root_key", actor_id: rootKeyId, user_agent: "walk-test/1.0" });
    expect(String(record.remote_address)).toMatch(/^127\.0\.0\.1$|^::1$|^::ffff:127\.0\.0\.1$/);
    const ids = (JSON.parse(String(record.resources)) as Array<{ id: string }>).map((r) => r.id);
    expect(ids).toContain(req.resource(data, req.body));
    const [indexed] = await h.db.pool.query("SELECT resource_id FROM audit_resources WHERE audit_id = ?", [record.id]);
    expect(new Set((indexed as Rows).map((r) => r.resource_id))).toEqual(new Set(ids));
    const text = JSON.stringify(records);
    expect(text).not.toContain("walk-secret");
    expect(text).not.toContain(rk);
    if (typeof data?.key === "string") expect(text).not.toContain(data.key);
  });
});
