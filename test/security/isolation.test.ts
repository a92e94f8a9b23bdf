// Workspace isolation: a root key of workspace B, holding `*` (and then one holding
// every grant named on A's own resource ids), tries every operation of every group
// against workspace A's resources, by id and by name. Every answer is a 404 or 403,
// or, for an operation that addresses by name within the caller's own workspace,
// an answer about B's own resources; no answer carries anything of A's. Afterwards
// every row of A (and every row anywhere that points at A) and A's rate-limit
// counters are exactly as before.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import { insertKeyMigration } from "../../src/storage/key-migrations.js";
import { expectOk, show, uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { allOperations, catalogue, fingerprint, idColumn, workspaceIdOf } from "./support.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
type Json = any;

const MONTH = 2_592_000_000;

/** Workspace A as seeded: ids, names and the plaintext keys. */
interface A {
  wsId: string;
  admin: string;
  /** The id of A's admin root key. */
  rootKeyId: string;
  apiId: string;
  apiName: string;
  keys: Array<{ keyId: string; key: string }>;
  identityId: string;
  externalId: string;
  nsName: string;
  nsId: string;
  overrideId: string;
  permIds: string[];
  roleId: string;
  roleName: string;
  marker: string;
  /** A seamapi key migration and a key imported under it, not yet verified (still pending). */
  migrationId: string;
  migrated: { keyId: string; key: string };
}

interface Attempt {
  body: unknown;
  /** The request names something B may own too (a name, or a namespace reference that B could have created under that name). */
  inB?: true;
  /**
   * The answer lists B's own root keys, whose grants this test wrote naming A's
   * ids (bNamed): those grants are B's own text, so they are left out of the check.
   */
  listsOwnGrants?: true;
}

describe("workspace isolation: B's root key against A's resources", () => {
  const h = useHarness();
  let a: A;
  let bStar: string;
  let bWs: string;
  /** Every id of A's rows, A's keys and A's meta marker: none may appear in an answer to B. */
  let secrets: string[];

  async function ok(path: string, body: unknown, rk: string): Promise<Json> {
    return expectOk(await h.post(path, body, rk), { pagination: /\.list/.test(path) });
  }

  beforeAll(async () => {
    const wsA = uid("ws_a");
    const admin = await h.rootKey(["*"], wsA);
    const marker = uid("a_secret_meta");
    const { apiId } = await ok("/v2/apis.createApi", { name: "a-api" }, admin);
    const perms = [
      (await ok("/v2/permissions.createPermission", { name: "read", slug: "a.read" }, admin)).permissionId,
      (await ok("/v2/permissions.createPermission", { name: "write", slug: "a.write" }, admin)).permissionId,
    ];
    const { roleId } = await ok("/v2/permissions.createRole", { name: "a-role", permissions: ["a.write"] }, admin);
    const { identityId } = await ok(
      "/v2/identities.createIdentity",
      { externalId: "a-user", meta: { marker }, ratelimits: [{ name: "per_identity", limit: 100, duration: MONTH }] },
      admin,
    );
    const plain = await ok(
      "/v2/keys.createKey",
      {
        apiId,
        prefix: "ak",
        name: "a-key",
        meta: { marker },
        credits: { remaining: 100 },
        ratelimits: [{ name: "per_key", limit: 100, duration: MONTH }],
        permissions: ["a.read"],
        roles: ["a-role"],
        externalId: "a-user",
      },
      admin,
    );
    const recoverable = await ok("/v2/keys.createKey", { apiId, recoverable: true }, admin);
    const granted = await ok("/v2/keys.createKey", { apiId }, admin);
    await ok("/v2/keys.addPermissions", { keyId: granted.keyId, permissions: ["a.write"] }, admin);
    await ok("/v2/keys.addRoles", { keyId: granted.keyId, roles: ["a-role"] }, admin);
    await ok("/v2/ratelimit.limit", { namespace: "a-ns", identifier: "u1", limit: 100, duration: MONTH, cost: 3 }, admin);
    const { overrideId } = await ok("/v2/ratelimit.setOverride", { namespace: "a-ns", identifier: "vip", limit: 50, duration: MONTH }, admin);
    // Some use of A's key limits and credits, so the counters are not at their start.
    for (let i = 0; i < 2; i++) expect((await ok("/v2/keys.verifyKey", { key: plain.key }, admin)).valid).toBe(true);
    const wsId = await workspaceIdOf(h.db.pool, wsA);
    const migrationId = newId("mig");
    await insertKeyMigration(h.db.pool, { id: migrationId, workspaceId: wsId, algorithm: "github.com/seamapi/prefixed-api-key", createdAt: Date.now() });
    const long = bs58.encode(randomBytes(18));
    const migratedKey = `amig_${bs58.encode(randomBytes(6))}_${long}`;
    const { migrated } = await ok(
      "/v2/keys.migrateKeys",
      { migrationId, apiId, keys: [{ hash: createHash("sha256").update(long).digest("hex"), meta: { marker } }] },
      admin,
    );
    const [ns] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM ratelimit_namespaces WHERE workspace_id = ?", [wsId]);
    const [rks] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM root_keys WHERE workspace_id = ?", [wsId]);
    a = {
      wsId,
      admin,
      rootKeyId: rks[0]?.id as string,
      apiId,
      apiName: "a-api",
      keys: [plain, recoverable, granted],
      identityId,
      externalId: "a-user",
      nsName: "a-ns",
      nsId: ns[0]?.id as string,
      overrideId,
      permIds: perms,
      roleId,
      roleName: "a-role",
      marker,
      migrationId,
      migrated: { keyId: migrated[0].keyId, key: migratedKey },
    };
    bWs = uid("ws_b");
    bStar = await h.rootKey(["*"], bWs);

    const ids = new Set<string>([wsId]);
    const fp = await fingerprint(h.db.pool, wsId);
    for (const rows of Object.values(fp)) {
      for (const row of rows) for (const [col, v] of JSON.parse(row) as Array<[string, unknown]>) if (idColumn(col) && typeof v === "string") ids.add(v);
    }
    secrets = [...ids, ...a.keys.map((k) => k.key), a.migrated.key, marker];
    expect(secrets).toContain(a.nsId);
    expect(secrets).toContain(a.overrideId);
  });

  /** Requests built from A's ids and names, per operation. */
  function attempts(op: string): Attempt[] {
    const keyIds = a.keys.map((k) => k.keyId);
    const eachKey = (f: (k: { keyId: string; key: string }) => unknown): Attempt[] => a.keys.map((k) => ({ body: f(k) }));
    const limitReq = (namespace: string) => ({ namespace, identifier: "u1", limit: 1, duration: MONTH, cost: 1 });
    const byNs = (f: (ns: string) => unknown): Attempt[] => [a.nsId, a.nsName].map((ns) => ({ body: f(ns), inB: true }));
    const list = (): Attempt[] => [
      { body: { apiId: a.apiId } },
      { body: { apiId: a.apiId, decrypt: true } },
      { body: { apiId: a.apiId, externalId: a.externalId } },
    ];
    const table: Record<string, Attempt[]> = {
      "apis.createApi": [{ body: { name: a.apiName }, inB: true }],
      "apis.getApi": [{ body: { apiId: a.apiId } }],
      "apis.listKeys": list(),
      "apis.deleteApi": [{ body: { apiId: a.apiId } }],
      "keys.createKey": [{ body: { apiId: a.apiId } }, { body: { apiId: a.apiId, recoverable: true, externalId: a.externalId, roles: [a.roleName] } }],
      "keys.verifyKey": [
        ...eachKey((k) => ({ key: k.key })),
        ...eachKey((k) => ({ key: k.key, permissions: "a.read", credits: { cost: 5 }, ratelimits: [{ name: "per_key" }, { name: "per_identity" }] })),
        // A's pending imported key under A's migration: B's caller is not of that workspace.
        { body: { key: a.migrated.key, migrationId: a.migrationId } },
      ],
      "keys.migrateKeys": [
        {
          body: {
            migrationId: a.migrationId,
            apiId: a.apiId,
            keys: [
              {
                hash: createHash("sha256")
                  .update(a.keys[0]?.key ?? "")
                  .digest("base64"),
                externalId: a.externalId,
                roles: [a.roleName],
              },
            ],
          },
        },
      ],
      "keys.getKey": [...eachKey((k) => ({ keyId: k.keyId })), ...eachKey((k) => ({ keyId: k.keyId, decrypt: true }))],
      "keys.whoami": eachKey((k) => ({ key: k.key })),
      "keys.updateKey": eachKey((k) => ({
        keyId: k.keyId,
        name: "taken",
        enabled: false,
        meta: null,
        expires: 1,
        credits: { remaining: 0 },
        externalId: "b-user",
        ratelimits: [],
        roles: [],
        permissions: [],
      })),
      "keys.updateCredits": eachKey((k) => ({ keyId: k.keyId, operation: "set", value: 0 })),
      "keys.deleteKey": eachKey((k) => ({ keyId: k.keyId, permanent: true })),
      "keys.rerollKey": eachKey((k) => ({ keyId: k.keyId, expiration: 0 })),
      "keys.listKeys": list(),
      "keys.addPermissions": keyIds.map((keyId) => ({ body: { keyId, permissions: ["a.read", "b.new"] } })),
      "keys.removePermissions": keyIds.map((keyId) => ({ body: { keyId, permissions: ["a.read"] } })),
      "keys.setPermissions": keyIds.map((keyId) => ({ body: { keyId, permissions: [] } })),
      "keys.addRoles": keyIds.map((keyId) => ({ body: { keyId, roles: [a.roleName] } })),
      "keys.removeRoles": keyIds.map((keyId) => ({ body: { keyId, roles: [a.roleName] } })),
      "keys.setRoles": keyIds.map((keyId) => ({ body: { keyId, roles: [] } })),
      "identities.createIdentity": [{ body: { externalId: a.externalId }, inB: true }],
      "identities.getIdentity": [{ body: { identity: a.identityId } }, { body: { identity: a.externalId }, inB: true }],
      "identities.listIdentities": [
        { body: {}, inB: true },
        { body: { search: a.externalId }, inB: true },
        { body: { cursor: a.identityId }, inB: true },
      ],
      "identities.updateIdentity": [
        { body: { identity: a.identityId, meta: {}, ratelimits: [] } },
        { body: { identity: a.externalId, meta: {}, ratelimits: [] }, inB: true },
      ],
      "identities.deleteIdentity": [{ body: { identity: a.identityId } }, { body: { identity: a.externalId }, inB: true }],
      "ratelimit.limit": byNs(limitReq),
      "ratelimit.multiLimit": [{ body: [limitReq(a.nsName), limitReq(a.nsId)], inB: true }],
      "ratelimit.setOverride": byNs((namespace) => ({ namespace, identifier: "vip", limit: 0, duration: 60_000 })),
      "ratelimit.getOverride": byNs((namespace) => ({ namespace, identifier: "vip" })),
      "ratelimit.listOverrides": byNs((namespace) => ({ namespace })),
      "ratelimit.deleteOverride": byNs((namespace) => ({ namespace, identifier: "vip" })),
      "permissions.createPermission": [{ body: { name: "read", slug: "a.read" }, inB: true }],
      "permissions.getPermission": [...a.permIds.map((permission) => ({ body: { permission } })), { body: { permission: "a.read" }, inB: true }],
      "permissions.listPermissions": [
        { body: {}, inB: true },
        { body: { search: "a." }, inB: true },
      ],
      "permissions.deletePermission": [...a.permIds.map((permission) => ({ body: { permission } })), { body: { permission: "a.write" }, inB: true }],
      "permissions.createRole": [{ body: { name: a.roleName, permissions: ["a.read"] }, inB: true }],
      "permissions.getRole": [{ body: { role: a.roleId } }, { body: { role: a.roleName }, inB: true }],
      "permissions.listRoles": [{ body: {}, inB: true }],
      "permissions.deleteRole": [{ body: { role: a.roleId } }, { body: { role: a.roleName }, inB: true }],
      "permissions.setRolePermissions": [
        { body: { roleId: a.roleId, permissions: [] } },
        { body: { roleId: a.roleId, permissions: ["a.read", "b.new"] } },
        { body: { roleId: a.roleName, permissions: ["a.read", "b.new"] }, inB: true },
      ],
      "rootKeys.createRootKey": [{ body: { permissions: ["apis.*.read_api"] }, inB: true }],
      "rootKeys.listRootKeys": [{ body: {}, inB: true, listsOwnGrants: true }],
      "rootKeys.updateRootKey": [{ body: { keyId: a.rootKeyId, enabled: false } }, { body: { keyId: a.rootKeyId, permissions: ["*"] } }],
      "rootKeys.rotateRootKey": [{ body: { keyId: a.rootKeyId, gracePeriodMs: 0 } }],
      "rootKeys.deleteRootKey": [{ body: { keyId: a.rootKeyId } }],
      // B's log: B's own records only, whatever it filters on.
      // B's analytics: B's rows only, whatever the query names (A's ids, the workspace column).
      "analytics.getVerifications": [
        { body: { query: "SELECT key_id, workspace_id FROM key_verifications_v1" }, inB: true },
        { body: { query: `SELECT key_id FROM key_verifications_v1 WHERE key_id = '${a.keys[0]?.keyId}' OR workspace_id = '${a.wsId}'` }, inB: true },
      ],
      "analytics.getRatelimits": [
        { body: { query: "SELECT namespace_id, identifier FROM ratelimits_v1" }, inB: true },
        { body: { query: `SELECT identifier FROM ratelimits_per_minute_v1 WHERE namespace_id = '${a.nsId}'` }, inB: true },
      ],
      "auditLogs.listLogs": [
        { body: {}, inB: true },
        { body: { resourceId: a.apiId }, inB: true },
        { body: { actorId: a.rootKeyId }, inB: true },
      ],
    };
    const found = table[op];
    if (found === undefined) throw new Error(`no isolation request builder for ${op}`);
    return found;
  }

  /** A's rate-limit state, read with cost 0 (nothing consumed): namespace counters, the override, key and identity limits, credits. */
  async function probe(): Promise<unknown> {
    const read = (identifier: string) => ok("/v2/ratelimit.limit", { namespace: a.nsName, identifier, limit: 100, duration: MONTH, cost: 0 }, a.admin);
    const v = await ok(
      "/v2/keys.verifyKey",
      {
        key: a.keys[0]?.key,
        credits: { cost: 0 },
        ratelimits: [
          { name: "per_key", cost: 0 },
          { name: "per_identity", cost: 0 },
        ],
      },
      a.admin,
    );
    expect(v.valid, JSON.stringify(v)).toBe(true);
    return {
      u1: await read("u1"),
      vip: await read("vip"),
      credits: v.credits,
      limits: (v.ratelimits as Json[]).map((r) => [r.name, r.limit, r.remaining]).sort(),
    };
  }

  /**
   * Sends every attempt of every operation with this root key and checks each
   * answer. A 409 is B's own conflict, possible only once B holds A's names.
   */
  async function sweep(rk: string, bOwnsANames: boolean): Promise<number> {
    let sent = 0;
    for (const op of allOperations(h)) {
      for (const attempt of attempts(op)) {
        const res = await h.post(`/v2/${op}`, attempt.body, rk);
        sent++;
        const what = `${op} ${JSON.stringify(attempt.body)} -> ${show(res)}`;
        if (op === "keys.verifyKey") {
          // Another workspace's key: exactly the minimal NOT_FOUND, nothing about the key (docs/auth.md, "Workspace isolation").
          expect(res.status, what).toBe(200);
          expect(res.body.data, what).toEqual({ valid: false, code: "NOT_FOUND" });
        } else if (res.status === 200 || (res.status === 409 && bOwnsANames)) {
          expect(attempt.inB, `${what}: only a request naming something B may own can succeed`).toBe(true);
        } else {
          expect([403, 404], what).toContain(res.status);
        }
        const sentText = JSON.stringify(attempt.body);
        const answer = attempt.listsOwnGrants === true ? JSON.stringify(res.body, (k, v) => (k === "permissions" ? undefined : v)) : res.text;
        for (const s of secrets) if (!sentText.includes(s)) expect(answer.includes(s), `${what}: the answer holds A's ${s}`).toBe(false);
      }
    }
    return sent;
  }

  it("there is a request builder for every RPC the services define", () => {
    for (const op of allOperations(h)) expect(attempts(op).length, op).toBeGreaterThan(0);
  });

  it("every operation with B's keys gives 404/403 (or acts inside B), reveals nothing of A, and changes none of A's rows or counters", async () => {
    const before = await probe();
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    const rows = await fingerprint(h.db.pool, a.wsId);
    expect(Object.values(rows).flat().length).toBeGreaterThan(20);

    // `*` in B; then every grant of the catalogue named on A's own resource ids.
    const bNamed = await h.rootKey(catalogue({ apiId: [a.apiId], namespaceId: [a.nsId], identityId: [a.identityId] }, false), bWs);
    expect(await sweep(bStar, false)).toBeGreaterThan(80);
    // Once more each, now that B has resources under A's names: the names reach B's, never A's.
    await sweep(bNamed, true);
    await sweep(bStar, true);

    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    expect(await fingerprint(h.db.pool, a.wsId)).toEqual(rows);
    expect(await probe()).toEqual(before);
  });

  it("names resolve inside the caller's workspace: B reaches its own resources under A's names", async () => {
    const expectB = (data: Json, aId: string) => {
      expect(JSON.stringify(data)).not.toContain(aId);
    };
    await h.post("/v2/identities.createIdentity", { externalId: a.externalId }, bStar);
    expectB(await ok("/v2/identities.getIdentity", { identity: a.externalId }, bStar), a.identityId);
    await h.post("/v2/permissions.createPermission", { name: "read", slug: "a.read" }, bStar);
    expectB(await ok("/v2/permissions.getPermission", { permission: "a.read" }, bStar), a.permIds[0] as string);
    await h.post("/v2/permissions.createRole", { name: a.roleName }, bStar);
    expectB(await ok("/v2/permissions.getRole", { role: a.roleName }, bStar), a.roleId);
    await ok("/v2/ratelimit.limit", { namespace: a.nsName, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, bStar);
    await ok("/v2/ratelimit.setOverride", { namespace: a.nsName, identifier: "vip", limit: 7, duration: 60_000 }, bStar);
    const b = await h.post("/v2/ratelimit.limit", { namespace: a.nsName, identifier: "vip", limit: 100, duration: MONTH, cost: 0 }, bStar);
    expect(expectOk(b).overrideId).not.toBe(a.overrideId);
  });

  it("the checks above can fail: a change A makes shows in the fingerprint and in the probe", async () => {
    const before = await probe();
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    const rows = await fingerprint(h.db.pool, a.wsId);
    await ok("/v2/ratelimit.limit", { namespace: a.nsName, identifier: "u1", limit: 100, duration: MONTH, cost: 1 }, a.admin);
    expect(await probe()).not.toEqual(before);
    await ok("/v2/keys.updateKey", { keyId: a.keys[2]?.keyId, name: "renamed" }, a.admin);
    expect(await fingerprint(h.db.pool, a.wsId)).not.toEqual(rows);
  });
});
