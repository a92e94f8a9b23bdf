// Root-key permissions, generated from the permission table
// (src/domain/auth/operation-permissions.ts), not written per case: for every
// operation and every conditional grant, a root key holding every grant of the
// catalogue except the needed one (in `*` and specific-resource forms, plus
// look-alike strings) is refused and changes nothing, and a root key holding only
// the needed grants succeeds. The table must name every RPC the services define.
import { createHash, randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import {
  CONDITIONS,
  type Condition,
  type Denial,
  FORBIDDEN,
  OPERATION_PERMISSIONS,
  type OperationPermissions,
} from "../../src/domain/auth/operation-permissions.js";
import { insertKeyMigration } from "../../src/storage/key-migrations.js";
import { expectError, expectOk, show, uid } from "../contract/shared/helpers.js";
import { bearer, call, failure, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { allOperations, catalogue, coversAny, fingerprint, NEW, nearMisses, resolveRules, type Vars, workspaceIdOf } from "./support.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
type Json = any;

/** A workspace of its own per built case, with an admin key (`*`) to seed it. */
interface Ctx {
  ws: string;
  wsId: string;
  admin: string;
}

interface Built {
  body: unknown;
  vars: Vars;
  /** Checks the data of a successful answer beyond its 200. */
  ok?: (data: Json) => void;
}

interface Case {
  op: string;
  label: string;
  conditions: Condition[];
  build(ctx: Ctx): Promise<Built>;
}

const MONTH = 2_592_000_000;

const rulesOf = (op: string): OperationPermissions => {
  const t = OPERATION_PERMISSIONS[op];
  if (t === undefined) throw new Error(`no permission table entry for ${op}`);
  return t;
};

/** The table's rules that apply to a request meeting these conditions. */
const applicable = (op: string, conditions: readonly Condition[]) => rulesOf(op).rules.filter((r) => r.when === undefined || conditions.includes(r.when));

describe("root-key permissions, generated from the permission table", () => {
  const h = useHarness();

  async function post(path: string, body: unknown, rk: string): Promise<Json> {
    return expectOk(await h.post(path, body, rk), { pagination: /\.list/.test(path) });
  }

  async function context(): Promise<Ctx> {
    const ws = uid("perm_ws");
    const admin = await h.rootKey(["*"], ws);
    return { ws, admin, wsId: await workspaceIdOf(h.db.pool, ws) };
  }

  // Seeding through the API with the workspace's admin key.
  const apiOf = async (c: Ctx) => (await post("/v2/apis.createApi", { name: uid("api") }, c.admin)).apiId as string;
  const keyOf = async (c: Ctx, apiId: string, fields: Record<string, unknown> = {}) =>
    (await post("/v2/keys.createKey", { apiId, ...fields }, c.admin)) as { keyId: string; key: string };
  const apiKey = async (c: Ctx, fields: Record<string, unknown> = {}) => {
    const apiId = await apiOf(c);
    return { apiId, ...(await keyOf(c, apiId, fields)) };
  };
  const permissionOf = async (c: Ctx, slug = uid("p.read")) => {
    const { permissionId } = await post("/v2/permissions.createPermission", { name: slug, slug }, c.admin);
    return { slug, id: permissionId as string };
  };
  const roleOf = async (c: Ctx, permissions: string[] = []) => {
    const name = uid("role");
    const { roleId } = await post("/v2/permissions.createRole", { name, permissions }, c.admin);
    return { name, id: roleId as string };
  };
  const rootKeyOf = async (c: Ctx, grant: string): Promise<string> =>
    (await post("/v2/rootKeys.createRootKey", { permissions: [grant] }, c.admin)).keyId as string;
  const identityOf = async (c: Ctx) => {
    const externalId = uid("user");
    const { identityId } = await post("/v2/identities.createIdentity", { externalId }, c.admin);
    return { externalId, id: identityId as string };
  };
  const namespaceOf = async (c: Ctx) => {
    const name = uid("ns");
    await post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, c.admin);
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE workspace_id = ? AND name = ?", [c.wsId, name]);
    return { name, id: (rows as Array<{ id: string }>)[0]?.id as string };
  };
  const overrideOf = async (c: Ctx) => {
    const ns = await namespaceOf(c);
    await post("/v2/ratelimit.setOverride", { namespace: ns.id, identifier: "vip", limit: 5, duration: 60_000 }, c.admin);
    return ns;
  };
  const limitReq = (namespace: string) => ({ namespace, identifier: "u1", limit: 10, duration: MONTH });

  const CASES: Case[] = [
    { op: "apis.createApi", label: "base", conditions: [], build: async () => ({ body: { name: uid("api") }, vars: {} }) },
    {
      op: "apis.getApi",
      label: "base",
      conditions: [],
      build: async (c) => {
        const apiId = await apiOf(c);
        return { body: { apiId }, vars: { apiId: [apiId] } };
      },
    },
    ...["apis.listKeys", "keys.listKeys"].flatMap((op): Case[] => [
      {
        op,
        label: "base",
        conditions: [],
        build: async (c) => {
          const k = await apiKey(c);
          return { body: { apiId: k.apiId }, vars: { apiId: [k.apiId] } };
        },
      },
      {
        op,
        label: "decrypt",
        conditions: ["decrypt"],
        build: async (c) => {
          const k = await apiKey(c, { recoverable: true });
          return {
            body: { apiId: k.apiId, decrypt: true },
            vars: { apiId: [k.apiId] },
            ok: (d) => expect(JSON.stringify(d)).toContain(k.key),
          };
        },
      },
    ]),
    {
      op: "apis.deleteApi",
      label: "base",
      conditions: [],
      build: async (c) => {
        const apiId = await apiOf(c);
        return { body: { apiId }, vars: { apiId: [apiId] } };
      },
    },

    {
      op: "keys.createKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const apiId = await apiOf(c);
        return { body: { apiId }, vars: { apiId: [apiId] } };
      },
    },
    {
      op: "keys.createKey",
      label: "recoverable",
      conditions: ["recoverable"],
      build: async (c) => {
        const apiId = await apiOf(c);
        return { body: { apiId, recoverable: true }, vars: { apiId: [apiId] } };
      },
    },
    {
      // The table says roles, permissions (even new ones) and an identity need no further grant.
      op: "keys.createKey",
      label: "with a role, an existing and a new permission, and a new externalId",
      conditions: [],
      build: async (c) => {
        const apiId = await apiOf(c);
        const [perm, role] = [await permissionOf(c), await roleOf(c)];
        return { body: { apiId, roles: [role.name], permissions: [perm.slug, uid("new.slug")], externalId: uid("ext") }, vars: { apiId: [apiId] } };
      },
    },
    {
      op: "keys.verifyKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { key: k.key }, vars: { apiId: [k.apiId] }, ok: (d) => expect(d).toMatchObject({ valid: true, code: "VALID" }) };
      },
    },
    {
      op: "keys.getKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { keyId: k.keyId }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.getKey",
      label: "decrypt",
      conditions: ["decrypt"],
      build: async (c) => {
        const k = await apiKey(c, { recoverable: true });
        return { body: { keyId: k.keyId, decrypt: true }, vars: { apiId: [k.apiId] }, ok: (d) => expect(d.plaintext).toBe(k.key) };
      },
    },
    {
      op: "keys.whoami",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { key: k.key }, vars: { apiId: [k.apiId] }, ok: (d) => expect(d.keyId).toBe(k.keyId) };
      },
    },
    {
      op: "keys.updateKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { keyId: k.keyId, name: "renamed" }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.updateKey",
      label: "replacing roles, permissions (one new) and the identity",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        const role = await roleOf(c);
        return { body: { keyId: k.keyId, roles: [role.name], permissions: [uid("new.slug")], externalId: uid("ext") }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.updateCredits",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c, { credits: { remaining: 3 } });
        return { body: { keyId: k.keyId, operation: "set", value: 5 }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.deleteKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { keyId: k.keyId }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.rerollKey",
      label: "base",
      conditions: [],
      build: async (c) => {
        const k = await apiKey(c);
        return { body: { keyId: k.keyId, expiration: 0 }, vars: { apiId: [k.apiId] } };
      },
    },
    {
      op: "keys.rerollKey",
      label: "a recoverable key",
      conditions: ["recoverable"],
      build: async (c) => {
        const k = await apiKey(c, { recoverable: true });
        return { body: { keyId: k.keyId, expiration: 0 }, vars: { apiId: [k.apiId] } };
      },
    },
    ...(["keys.addPermissions", "keys.setPermissions"] as const).flatMap((op): Case[] => [
      {
        op,
        label: "an existing slug",
        conditions: [],
        build: async (c) => {
          const [k, perm] = [await apiKey(c), await permissionOf(c)];
          return { body: { keyId: k.keyId, permissions: [perm.slug] }, vars: { apiId: [k.apiId] } };
        },
      },
      {
        op,
        label: "a new slug",
        conditions: ["newPermissionSlug"],
        build: async (c) => {
          const k = await apiKey(c);
          return { body: { keyId: k.keyId, permissions: [uid("new.slug")] }, vars: { apiId: [k.apiId] } };
        },
      },
    ]),
    {
      op: "keys.removePermissions",
      label: "base",
      conditions: [],
      build: async (c) => {
        const slug = uid("p.read");
        const k = await apiKey(c, { permissions: [slug] });
        return { body: { keyId: k.keyId, permissions: [slug] }, vars: { apiId: [k.apiId] } };
      },
    },
    ...["keys.addRoles", "keys.removeRoles", "keys.setRoles"].map(
      (op): Case => ({
        op,
        label: "base",
        conditions: [],
        build: async (c) => {
          const role = await roleOf(c);
          const k = await apiKey(c, op === "keys.removeRoles" ? { roles: [role.name] } : {});
          return { body: { keyId: k.keyId, roles: [role.name] }, vars: { apiId: [k.apiId] } };
        },
      }),
    ),
    {
      // The table says the identity, role and permission it creates need no further grant.
      op: "keys.migrateKeys",
      label: "with a new externalId, role and permission",
      conditions: [],
      build: async (c) => {
        const apiId = await apiOf(c);
        const migrationId = newId("mig");
        await insertKeyMigration(h.db.pool, { id: migrationId, workspaceId: c.wsId, algorithm: "sha256", createdAt: Date.now() });
        const hash = createHash("sha256").update(randomBytes(16)).digest("base64");
        return {
          body: { migrationId, apiId, keys: [{ hash, externalId: uid("ext"), roles: [uid("role")], permissions: [uid("new.slug")] }] },
          vars: { apiId: [apiId] },
          ok: (d) => expect(d).toEqual({ migrated: [{ hash, keyId: expect.any(String) }], failed: [] }),
        };
      },
    },

    { op: "identities.createIdentity", label: "base", conditions: [], build: async () => ({ body: { externalId: uid("user") }, vars: {} }) },
    {
      op: "identities.getIdentity",
      label: "by id",
      conditions: [],
      build: async (c) => {
        const i = await identityOf(c);
        return { body: { identity: i.id }, vars: { identityId: [i.id] } };
      },
    },
    {
      op: "identities.getIdentity",
      label: "by externalId",
      conditions: [],
      build: async (c) => {
        const i = await identityOf(c);
        return { body: { identity: i.externalId }, vars: { identityId: [i.id] } };
      },
    },
    {
      op: "identities.listIdentities",
      label: "base",
      conditions: [],
      build: async (c) => {
        await identityOf(c);
        return { body: {}, vars: {} };
      },
    },
    {
      op: "identities.updateIdentity",
      label: "base",
      conditions: [],
      build: async (c) => {
        const i = await identityOf(c);
        return { body: { identity: i.externalId, meta: { a: 1 } }, vars: { identityId: [i.id] } };
      },
    },
    {
      op: "identities.deleteIdentity",
      label: "base",
      conditions: [],
      build: async (c) => {
        const i = await identityOf(c);
        return { body: { identity: i.id }, vars: { identityId: [i.id] } };
      },
    },

    {
      op: "ratelimit.limit",
      label: "an existing namespace",
      conditions: [],
      build: async (c) => {
        const ns = await namespaceOf(c);
        return { body: limitReq(ns.name), vars: { namespaceId: [ns.id] } };
      },
    },
    {
      op: "ratelimit.limit",
      label: "a new namespace",
      conditions: ["newNamespace"],
      build: async () => ({ body: limitReq(uid("ns")), vars: { namespaceId: [NEW] } }),
    },
    {
      op: "ratelimit.multiLimit",
      label: "two existing namespaces",
      conditions: [],
      build: async (c) => {
        const [a, b] = [await namespaceOf(c), await namespaceOf(c)];
        return { body: [limitReq(a.name), limitReq(b.id)], vars: { namespaceId: [a.id, b.id] }, ok: (d) => expect(d.passed).toBe(true) };
      },
    },
    {
      op: "ratelimit.multiLimit",
      label: "an existing and a new namespace",
      conditions: ["newNamespace"],
      build: async (c) => {
        const a = await namespaceOf(c);
        return { body: [limitReq(a.name), limitReq(uid("ns"))], vars: { namespaceId: [a.id, NEW] }, ok: (d) => expect(d.passed).toBe(true) };
      },
    },
    {
      op: "ratelimit.setOverride",
      label: "by namespace name",
      conditions: [],
      build: async (c) => {
        const ns = await namespaceOf(c);
        return { body: { namespace: ns.name, identifier: "x", limit: 1, duration: 60_000 }, vars: { namespaceId: [ns.id] } };
      },
    },
    {
      op: "ratelimit.getOverride",
      label: "base",
      conditions: [],
      build: async (c) => {
        const ns = await overrideOf(c);
        return { body: { namespace: ns.id, identifier: "vip" }, vars: { namespaceId: [ns.id] } };
      },
    },
    {
      op: "ratelimit.listOverrides",
      label: "base",
      conditions: [],
      build: async (c) => {
        const ns = await overrideOf(c);
        return { body: { namespace: ns.name }, vars: { namespaceId: [ns.id] } };
      },
    },
    {
      op: "ratelimit.deleteOverride",
      label: "base",
      conditions: [],
      build: async (c) => {
        const ns = await overrideOf(c);
        return { body: { namespace: ns.id, identifier: "vip" }, vars: { namespaceId: [ns.id] } };
      },
    },

    {
      op: "permissions.createPermission",
      label: "base",
      conditions: [],
      build: async () => {
        const slug = uid("p.new");
        return { body: { name: slug, slug }, vars: {} };
      },
    },
    {
      op: "permissions.getPermission",
      label: "base",
      conditions: [],
      build: async (c) => {
        const p = await permissionOf(c);
        return { body: { permission: p.slug }, vars: {} };
      },
    },
    {
      op: "permissions.listPermissions",
      label: "base",
      conditions: [],
      build: async (c) => {
        await permissionOf(c);
        return { body: {}, vars: {} };
      },
    },
    {
      op: "permissions.deletePermission",
      label: "base",
      conditions: [],
      build: async (c) => {
        const p = await permissionOf(c);
        return { body: { permission: p.id }, vars: {} };
      },
    },
    { op: "permissions.createRole", label: "no permissions", conditions: [], build: async () => ({ body: { name: uid("role") }, vars: {} }) },
    {
      op: "permissions.createRole",
      label: "existing permissions",
      conditions: ["namesPermissions"],
      build: async (c) => {
        const p = await permissionOf(c);
        return { body: { name: uid("role"), permissions: [p.slug] }, vars: {} };
      },
    },
    {
      op: "permissions.createRole",
      label: "a new permission",
      conditions: ["namesPermissions", "newPermissionSlug"],
      build: async (c) => {
        const p = await permissionOf(c);
        return { body: { name: uid("role"), permissions: [p.slug, uid("new.slug")] }, vars: {} };
      },
    },
    {
      op: "permissions.getRole",
      label: "base",
      conditions: [],
      build: async (c) => {
        const r = await roleOf(c);
        return { body: { role: r.name }, vars: {} };
      },
    },
    {
      op: "permissions.listRoles",
      label: "base",
      conditions: [],
      build: async (c) => {
        await roleOf(c);
        return { body: {}, vars: {} };
      },
    },
    {
      op: "permissions.deleteRole",
      label: "base",
      conditions: [],
      build: async (c) => {
        const r = await roleOf(c);
        return { body: { role: r.id }, vars: {} };
      },
    },
    {
      // Adds one existing permission and removes another: both grants are exercised by what the call really does.
      op: "permissions.setRolePermissions",
      label: "existing slugs",
      conditions: [],
      build: async (c) => {
        const [kept, added] = [await permissionOf(c), await permissionOf(c)];
        const r = await roleOf(c, [kept.slug, (await permissionOf(c)).slug]);
        return { body: { roleId: r.id, permissions: [kept.slug, added.slug] }, vars: {}, ok: (d) => expect(d).toHaveLength(2) };
      },
    },
    {
      op: "permissions.setRolePermissions",
      label: "a new slug, the role by name",
      conditions: ["newPermissionSlug"],
      build: async (c) => {
        const r = await roleOf(c, [(await permissionOf(c)).slug]);
        return { body: { roleId: r.name, permissions: [uid("new.slug")] }, vars: {} };
      },
    },
    // A root key may give, and manage root keys holding, only grants its own cover:
    // each target below holds just the grant the case's caller is given.
    {
      op: "rootKeys.createRootKey",
      label: "base",
      conditions: [],
      build: async () => ({ body: { permissions: ["workspace.*.create_root_key"] }, vars: {} }),
    },
    { op: "rootKeys.listRootKeys", label: "base", conditions: [], build: async () => ({ body: {}, vars: {} }) },
    {
      op: "rootKeys.updateRootKey",
      label: "base",
      conditions: [],
      build: async (c) => ({ body: { keyId: await rootKeyOf(c, "workspace.*.update_root_key"), name: uid("renamed") }, vars: {} }),
    },
    {
      op: "rootKeys.rotateRootKey",
      label: "base",
      conditions: [],
      build: async (c) => ({ body: { keyId: await rootKeyOf(c, "workspace.*.update_root_key"), gracePeriodMs: 1_000 }, vars: {} }),
    },
    {
      op: "rootKeys.deleteRootKey",
      label: "base",
      conditions: [],
      build: async (c) => ({ body: { keyId: await rootKeyOf(c, "workspace.*.delete_root_key") }, vars: {} }),
    },
    { op: "auditLogs.listLogs", label: "base", conditions: [], build: async () => ({ body: {}, vars: {} }) },
    {
      op: "analytics.getVerifications",
      label: "base",
      conditions: [],
      build: async (c) => {
        // A verification of the API's key, so that a permitted query has a row to find.
        const k = await apiKey(c);
        await post("/v2/keys.verifyKey", { key: k.key }, c.admin);
        await h.deps.analytics.flush();
        return {
          body: { query: "SELECT key_id FROM key_verifications_v1" },
          vars: { apiId: [k.apiId] },
          ok: (d) => expect(d).toContainEqual({ key_id: k.keyId }),
        };
      },
    },
    {
      op: "analytics.getRatelimits",
      label: "base",
      conditions: [],
      build: async (c) => {
        const ns = await namespaceOf(c);
        await post("/v2/ratelimit.limit", { namespace: ns.id, identifier: "analytics", limit: 100, duration: 60_000 }, c.admin);
        await h.deps.analytics.flush();
        return {
          body: { query: "SELECT identifier FROM ratelimits_v1" },
          vars: { namespaceId: [ns.id] },
          ok: (d) => expect(d).toContainEqual({ identifier: "analytics" }),
        };
      },
    },
  ];

  it("the table has an entry for every RPC the services define, and none for anything else", () => {
    const ops = allOperations(h);
    expect(ops.length).toBeGreaterThan(30);
    expect(
      ops.filter((op) => OPERATION_PERMISSIONS[op] === undefined),
      "RPCs without a permission table entry",
    ).toEqual([]);
    expect(
      Object.keys(OPERATION_PERMISSIONS).filter((op) => !ops.includes(op)),
      "table entries without an RPC",
    ).toEqual([]);
  });

  it("every operation has cases here, and together they exercise every condition its table entry names", () => {
    for (const op of allOperations(h)) {
      const cases = CASES.filter((c) => c.op === op);
      expect(cases.length, `no case for ${op}`).toBeGreaterThan(0);
      const named = new Set(rulesOf(op).rules.flatMap((r) => (r.when === undefined ? [] : [r.when])));
      const exercised = new Set(cases.flatMap((c) => c.conditions));
      expect(
        [...exercised].filter((x) => !named.has(x)),
        `${op}: cases claim conditions the table does not name`,
      ).toEqual([]);
      expect(
        [...named].filter((x) => !exercised.has(x)),
        `${op}: conditions no case exercises`,
      ).toEqual([]);
      for (const cond of named) expect(CONDITIONS[cond]).toBeTypeOf("string");
    }
  });

  /** Refused as the table says, and the workspace's rows are exactly as before. */
  async function expectDenied(c: Ctx, op: string, body: unknown, rk: string, denial: Denial, why: string): Promise<void> {
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    const before = await fingerprint(h.db.pool, c.wsId);
    const res = await h.post(`/v2/${op}`, body, rk);
    if (denial.status === 200 && denial.code === "") expect(expectOk(res), why).toEqual([]);
    else if (denial.status === 200) expect(expectOk(res), why).toEqual({ valid: false, code: denial.code });
    else expectError(h, res, denial.status, denial.code);
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    const after = await fingerprint(h.db.pool, c.wsId);
    if (op === "keys.verifyKey" && denial.status === 200) {
      // An answered verification (NOT_FOUND) is recorded for analytics, and nothing else changes.
      expect(after.analytics_verifications, `${why}: the NOT_FOUND was not recorded`).not.toEqual(before.analytics_verifications);
      for (const t of Object.keys(after).filter((t) => t.startsWith("analytics_verifications"))) {
        delete after[t];
        delete before[t];
      }
    }
    expect(after, `${why}: a refused request changed rows`).toEqual(before);
  }

  const label = (c: Case) => `${c.op} [${c.label}]`;

  it.each(CASES.map((c) => [label(c), c] as const))("%s: a root key with every grant but a needed one is refused and changes nothing", async (_l, c) => {
    const ctx = await context();
    const built = await c.build(ctx);
    const table = rulesOf(c.op);
    const rules = resolveRules(applicable(c.op, c.conditions), built.vars);
    expect(rules.length).toBeGreaterThan(0);
    for (const wanted of rules) {
      for (const decoys of [false, true]) {
        const grants = [...catalogue(built.vars, decoys), ...nearMisses(wanted)].filter((g) => !coversAny(g, wanted));
        const rk = await h.rootKey(grants, ctx.ws);
        const denial = (decoys ? table.deniedWithOtherResourceGrant : undefined) ?? table.denied ?? FORBIDDEN;
        await expectDenied(ctx, c.op, built.body, rk, denial, `${label(c)} without ${wanted.join(" | ")}${decoys ? " (with grants on other resources)" : ""}`);
      }
    }
  });

  it.each(CASES.map((c) => [label(c), c] as const))("%s: a root key with only the needed grants succeeds (`*` forms, then specific forms)", async (_l, c) => {
    const forms = new Set<string>();
    for (const form of ["star", "specific"] as const) {
      const ctx = await context();
      const built = await c.build(ctx);
      const rules = resolveRules(applicable(c.op, c.conditions), built.vars);
      const pick = (alts: string[]) => (form === "star" ? alts.find((a) => a.includes(".*.")) : alts.find((a) => !a.includes(".*."))) ?? (alts[0] as string);
      const grants = [...new Set(rules.map(pick))].sort();
      if (forms.has(grants.join())) continue;
      forms.add(grants.join());
      const rk = await h.rootKey(grants, ctx.ws);
      const res = await h.post(`/v2/${c.op}`, built.body, rk);
      expect(res.status, `${label(c)} with only ${grants.join(", ")}: ${show(res)}`).toBe(200);
      built.ok?.(res.body.data);
    }
  });

  // A retry with the same Idempotency-Key replays a stored answer: a root key the
  // table refuses must not get a permitted key's answer that way (createKey's
  // answer holds the new key).
  const firstCaseOfEachOp = CASES.filter((c, i) => CASES.findIndex((x) => x.op === c.op) === i);

  it.each(firstCaseOfEachOp.map((c) => [label(c), c] as const))(
    "%s: a refused root key gets no replay of a permitted request's answer through its Idempotency-Key",
    async (_l, c) => {
      expect(c.conditions).toEqual([]);
      const ctx = await context();
      const built = await c.build(ctx);
      const rules = resolveRules(applicable(c.op, c.conditions), built.vars);
      const headers = { "idempotency-key": uid("idem") };
      const allowed = await h.rootKey([...new Set(rules.map((alts) => alts[0] as string))], ctx.ws);
      const first = await h.post(`/v2/${c.op}`, built.body, allowed, headers);
      expect(first.status, show(first)).toBe(200);
      const [wanted] = rules as [string[]];
      const refused = await h.rootKey(
        catalogue(built.vars, false).filter((g) => !coversAny(g, wanted)),
        ctx.ws,
      );
      const again = await h.post(`/v2/${c.op}`, built.body, refused, headers);
      expect(again.headers["idempotent-replayed"], show(again)).toBeUndefined();
      expect([403, 404], show(again)).toContain(again.status);
    },
  );

  describe("over gRPC (spot checks: the same table holds on the other front door)", () => {
    // The JSON bodies of these cases are also valid gRPC requests (same field names, no nullable wrappers).
    const grpcCases: Array<{ svc: string; file: string; method: string; op: string }> = [
      { svc: "ApisService", file: "apis_service.proto", method: "createApi", op: "apis.createApi" },
      { svc: "KeysService", file: "keys_service.proto", method: "getKey", op: "keys.getKey" },
      { svc: "KeysService", file: "keys_service.proto", method: "createKey", op: "keys.createKey" },
      { svc: "RatelimitService", file: "ratelimit_service.proto", method: "limit", op: "ratelimit.limit" },
      { svc: "IdentitiesService", file: "identities_service.proto", method: "getIdentity", op: "identities.getIdentity" },
      { svc: "PermissionsService", file: "permissions_service.proto", method: "createRole", op: "permissions.createRole" },
    ];

    it.each(grpcCases.map((g) => [g.op, g] as const))(
      "%s: every grant but the needed one -> PERMISSION_DENIED with the code; only the needed ones -> OK",
      async (_l, g) => {
        const Ctor = service(loadServices(g.file), g.svc);
        const client = new Ctor(`127.0.0.1:${await h.grpcPort()}`, grpc.credentials.createInsecure());
        try {
          const c = CASES.find((x) => x.op === g.op && x.conditions.length === 0) as Case;
          const ctx = await context();
          const built = await c.build(ctx);
          const rules = resolveRules(applicable(c.op, []), built.vars);
          for (const wanted of rules) {
            const rk = await h.rootKey(
              catalogue(built.vars, true).filter((x) => !coversAny(x, wanted)),
              ctx.ws,
            );
            const err = await failure(call(client, g.method, built.body, bearer(rk)));
            expect(err.code, `${g.op} without ${wanted.join(" | ")}`).toBe(grpc.status.PERMISSION_DENIED);
            expect(err.metadata.get("error-code")).toEqual([FORBIDDEN.code]);
          }
          const rk = await h.rootKey([...new Set(rules.map((alts) => alts.find((a) => !a.includes(".*.")) ?? (alts[0] as string)))], ctx.ws);
          await expect(call(client, g.method, built.body, bearer(rk))).resolves.toBeDefined();
        } finally {
          client.close();
        }
      },
    );
  });
});
