// The audit records of the key domain's changes (src/domain/keys/): each change
// writes its record in its own transaction, naming the root key that made it,
// the request it came in, the resources by id and the fields by name. The
// records are read straight from audit_logs and audit_resources, so these
// tests do not depend on the listLogs endpoint.
//
// A security decision is protected here: no record may hold the key, its hash,
// the root key, a meta value, a credits value or a stored ciphertext. Each test
// puts recognisable values in and searches the whole row (and its resource rows)
// for them.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import type { Queryable } from "../../src/storage/sql.js";
import { seedMigration } from "../contract/keys.migrateKeys/support.js";
import { createApi, expectOk, type Json, seedRole, uid } from "../contract/shared/helpers.js";
import { type Harness, type Res, useHarness } from "../harness.js";

interface AuditRecord {
  pk: number;
  id: string;
  workspace_id: string | null;
  time_m: number;
  actor_type: string;
  actor_id: string;
  action: string;
  resources: Array<{ type: string; id: string }>;
  description: string;
  request_id: string | null;
  remote_address: string | null;
  user_agent: string | null;
  /** The rows of audit_resources, by resource id. */
  indexed: string[];
}

const ROOT_KEY_PERMISSIONS = ["*"];

/** Values no record may contain: the test searches every record's text for them. */
const META_SECRET = "meta-value-s3cr3t";
const CREDITS = 987_651;

describe("audit records of key changes", () => {
  const h = useHarness();

  const rootKeyIds = new Map<string, string>();
  async function rootKey(): Promise<{ rk: string; id: string }> {
    const rk = await h.rootKey(ROOT_KEY_PERMISSIONS);
    const [rs] = await h.db.pool.query("SELECT id FROM root_keys WHERE hash = ?", [hashKey(rk)]);
    const id = String((rs as Json[])[0]?.id);
    rootKeyIds.set(rk, id);
    return { rk, id };
  }

  async function lastPk(db: Queryable = h.db.pool): Promise<number> {
    const [rs] = await db.query("SELECT COALESCE(MAX(pk), 0) AS pk FROM audit_logs");
    return Number((rs as Json[])[0]?.pk);
  }

  /** The records written after `since` (a pk from lastPk), oldest first. */
  async function recordsAfter(since: number): Promise<AuditRecord[]> {
    const [rs] = await h.db.pool.query("SELECT * FROM audit_logs WHERE pk > ? ORDER BY pk", [since]);
    const out: AuditRecord[] = [];
    for (const r of rs as Json[]) {
      const [idx] = await h.db.pool.query("SELECT resource_id, workspace_id FROM audit_resources WHERE audit_id = ?", [r.id]);
      for (const i of idx as Json[]) expect(i.workspace_id).toBe(h.workspaceId);
      out.push({
        ...r,
        pk: Number(r.pk),
        time_m: Number(r.time_m),
        resources: JSON.parse(r.resources),
        indexed: (idx as Json[]).map((i) => String(i.resource_id)).sort(),
      });
    }
    return out;
  }

  /**
   * Runs a request and returns the records it wrote, after checking what every
   * record must have: the root key as actor, the request's id, the workspace,
   * every resource in the index, and none of the secret values.
   */
  async function recorded(
    run: () => Promise<Res>,
    rk: string,
    secrets: readonly string[] = [],
  ): Promise<{ res: Res; records: AuditRecord[]; firstUse: AuditRecord[] }> {
    const before = await lastPk();
    const res = await run();
    const all = await recordsAfter(before);
    for (const r of all) {
      expect(r.workspace_id).toBe(h.workspaceId);
      expect(r.actor_type).toBe("root_key");
      expect(r.actor_id).toBe(rootKeyIds.get(rk));
      expect(r.request_id).toBe(res.body?.meta?.requestId);
      expect(r.indexed).toEqual([...new Set(r.resources.map((x) => x.id))].sort());
      const text = JSON.stringify(r);
      for (const s of [rk, hashKey(rk), ...secrets]) expect(text).not.toContain(s);
    }
    // The key's own record, and those of identities and permissions the request created on first use (their own transaction).
    return { res, records: all.filter((r) => r.action.startsWith("key.")), firstUse: all.filter((r) => !r.action.startsWith("key.")) };
  }

  const keyOf = (r: AuditRecord) => r.resources.filter((x) => x.type === "key").map((x) => x.id);

  async function newKey(rk: string, apiId: string, fields: Record<string, unknown> = {}): Promise<{ keyId: string; key: string }> {
    return expectOk(await h.post("/v2/keys.createKey", { apiId, ...fields }, rk));
  }

  it("createKey of a plain key: one key.create record with the key and its API, in the key's own five statements, sent in one round trip", async () => {
    const { rk, id } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    await newKey(rk, apiId); // warms the API cache and the root key cache: the count below is the key's own

    let created: { keyId: string; key: string } | undefined;
    const { records } = await recorded(async () => {
      let res: Res | undefined;
      const sent = await statements(h, async () => {
        res = await h.post("/v2/keys.createKey", { apiId }, rk);
      });
      // BEGIN, the key, the record and its resource index, COMMIT: a plain key was
      // one INSERT before the audit log; its record has to commit with it, and all
      // five go to the server in one round trip (one call), as the INSERT did.
      expect(sent).toHaveLength(1);
      expect((sent[0] as string).split(";\n").map((s) => s.trim())).toEqual([
        "START TRANSACTION",
        expect.stringMatching(/^INSERT INTO `keys`/),
        expect.stringMatching(/^INSERT INTO audit_logs /),
        expect.stringMatching(/^INSERT INTO audit_resources \(audit_id, workspace_id, resource_id\) VALUES \(\?, \?, \?\), \(\?, \?, \?\)$/),
        "COMMIT",
      ]);
      created = expectOk(res as Res);
      return res as Res;
    }, rk);
    const keyId = created?.keyId as string;
    expect(records).toHaveLength(1);
    const [r] = records as [AuditRecord];
    expect(r).toMatchObject({ action: "key.create", actor_id: id, description: "Created the key." });
    expect(r.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
    ]);
    const text = JSON.stringify(r);
    expect(text).not.toContain(created?.key as string);
    expect(text).not.toContain(hashKey(created?.key as string));
  });

  it("createKey with every field: names the fields, links the identity, permissions and roles, holds no value", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const role = uid("role");
    const roleId = await seedRole(h, role);
    const externalId = uid("customer");
    let key = "";
    const { res, records, firstUse } = await recorded(
      async () => {
        const res = await h.post(
          "/v2/keys.createKey",
          {
            apiId,
            prefix: "aud",
            name: "named",
            externalId,
            meta: { secret: META_SECRET },
            roles: [role],
            permissions: ["docs.read"],
            expires: Date.now() + 86_400_000,
            credits: { remaining: CREDITS },
            ratelimits: [{ name: "requests", limit: 100, duration: 60_000 }],
            enabled: true,
            recoverable: true,
          },
          rk,
        );
        key = res.body?.data?.key;
        return res;
      },
      rk,
      [META_SECRET, String(CREDITS)],
    );
    const { keyId } = expectOk(res);
    expect(records).toHaveLength(1);
    const [r] = records as [AuditRecord];
    expect(r.action).toBe("key.create");
    // The identity and the permission the key names did not exist: each was created with its own record.
    const [madeIdentity] = (await h.db.pool.query("SELECT id FROM identities WHERE external_id = ?", [externalId]))[0] as Json[];
    const [madePermission] = (await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = 'docs.read'", [h.workspaceId]))[0] as Json[];
    expect(firstUse.map((x) => [x.action, x.resources]).sort()).toEqual(
      [
        ["identity.create", [{ type: "identity", id: madeIdentity.id }]],
        ["permission.create", [{ type: "permission", id: madePermission.id }]],
      ].sort(),
    );
    expect(r.description).toBe(
      "Created the key with name, prefix, externalId, meta, expires, credits, ratelimits, enabled, recoverable, roles and permissions.",
    );
    const [identity] = (await h.db.pool.query("SELECT id FROM identities WHERE external_id = ?", [externalId]))[0] as Json[];
    const [perm] = (await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = 'docs.read'", [h.workspaceId]))[0] as Json[];
    expect(r.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
      { type: "identity", id: identity.id },
      { type: "permission", id: perm.id },
      { type: "role", id: roleId },
    ]);
    const [enc] = (await h.db.pool.query("SELECT encrypted FROM encrypted_keys WHERE key_id = ?", [keyId]))[0] as Json[];
    const text = JSON.stringify(r);
    for (const s of [key, hashKey(key), String(enc.encrypted), externalId]) expect(text).not.toContain(s);
  });

  it("updateKey: one key.update record naming the fields changed, not their values", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const { keyId, key } = await newKey(rk, apiId);
    const { res, records } = await recorded(
      () =>
        h.post(
          "/v2/keys.updateKey",
          { keyId, name: "renamed", meta: { secret: META_SECRET }, ratelimits: [{ name: "requests", limit: 5, duration: 1000 }] },
          rk,
        ),
      rk,
      [key, hashKey(key), META_SECRET, "renamed"],
    );
    expectOk(res);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: "key.update", description: "Updated name, meta and ratelimits." });
    expect(records[0]?.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
    ]);
  });

  it("updateKey of the identity, credits and grants names the identities linked and unlinked and the permissions and roles set", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const role = uid("role");
    const roleId = await seedRole(h, role);
    const [first, second] = [uid("customer"), uid("customer")];
    const { keyId } = await newKey(rk, apiId, { externalId: first });
    const { records } = await recorded(
      () => h.post("/v2/keys.updateKey", { keyId, externalId: second, credits: { remaining: CREDITS }, roles: [role], permissions: ["docs.write"] }, rk),
      rk,
      [String(CREDITS)],
    );
    expect(records).toHaveLength(1);
    const r = records[0] as AuditRecord;
    expect(r.description).toBe("Updated externalId, credits.remaining, roles and permissions.");
    const idOf = async (externalId: string) => ((await h.db.pool.query("SELECT id FROM identities WHERE external_id = ?", [externalId]))[0] as Json[])[0].id;
    const [perm] = (await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = 'docs.write'", [h.workspaceId]))[0] as Json[];
    expect(r.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
      { type: "identity", id: await idOf(second) },
      { type: "identity", id: await idOf(first) },
      { type: "permission", id: perm.id },
      { type: "role", id: roleId },
    ]);
  });

  it("updateKey naming no field changes nothing to audit: no record", async () => {
    const { rk } = await rootKey();
    const { keyId } = await newKey(rk, await createApi(h, uid("api"), rk));
    const { res, records } = await recorded(() => h.post("/v2/keys.updateKey", { keyId }, rk), rk);
    expectOk(res);
    expect(records).toEqual([]);
  });

  it("updateCredits set, increment, decrement and set-to-unlimited: one key.update_credits record each, without the amounts", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const { keyId } = await newKey(rk, apiId, { credits: { remaining: 10 } });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ operation: "set", value: CREDITS }, "Set credits.remaining."],
      [{ operation: "increment", value: CREDITS }, "Incremented credits.remaining."],
      [{ operation: "decrement", value: 123_457 }, "Decremented credits.remaining."],
      [{ operation: "set" }, "Set credits.remaining to unlimited; cleared credits.refill."],
    ];
    for (const [body, description] of cases) {
      const { res, records } = await recorded(() => h.post("/v2/keys.updateCredits", { keyId, ...body }, rk), rk, [
        String(CREDITS),
        String(2 * CREDITS),
        "123457",
        String(2 * CREDITS - 123_457),
      ]);
      expectOk(res);
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ action: "key.update_credits", description });
      expect(records[0]?.resources).toEqual([
        { type: "key", id: keyId },
        { type: "api", id: apiId },
      ]);
    }
    // An increment of an unlimited key is refused (400) and rolled back: no record.
    const { res, records } = await recorded(() => h.post("/v2/keys.updateCredits", { keyId, operation: "increment", value: 1 }, rk), rk);
    expect(res.status).toBe(400);
    expect(records).toEqual([]);
  });

  it("verifyKey spending credits writes no record: a hot-path effect, not a management change", async () => {
    const { rk } = await rootKey();
    const { key } = await newKey(rk, await createApi(h, uid("api"), rk), { credits: { remaining: 5 } });
    const { res, records } = await recorded(() => h.post("/v2/keys.verifyKey", { key }, rk), rk);
    expect(expectOk(res).valid).toBe(true);
    expect(records).toEqual([]);
  });

  it("rerollKey: one key.reroll record naming the old and the new key", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const old = await newKey(rk, apiId, { meta: { secret: META_SECRET } });
    let fresh = "";
    const { res, records } = await recorded(
      async () => {
        const res = await h.post("/v2/keys.rerollKey", { keyId: old.keyId, expiration: 60_000 }, rk);
        fresh = res.body?.data?.key;
        return res;
      },
      rk,
      [old.key, hashKey(old.key), META_SECRET],
    );
    const { keyId } = expectOk(res);
    expect(records).toHaveLength(1);
    expect(records[0]?.action).toBe("key.reroll");
    expect(keyOf(records[0] as AuditRecord)).toEqual([old.keyId, keyId]);
    expect(records[0]?.resources).toContainEqual({ type: "api", id: apiId });
    expect(JSON.stringify(records[0])).not.toContain(fresh);
    expect(JSON.stringify(records[0])).not.toContain(hashKey(fresh));
  });

  it.each([
    ["soft", false, "Deleted the key; it stops verifying."],
    ["permanent", true, "Deleted the key permanently, with its permissions, roles, rate limits and stored ciphertext."],
  ])("deleteKey (%s): one key.delete record; deleting it again answers 404 and writes none", async (_name, permanent, description) => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const { keyId, key } = await newKey(rk, apiId);
    const { res, records } = await recorded(() => h.post("/v2/keys.deleteKey", { keyId, permanent }, rk), rk, [key, hashKey(key)]);
    expectOk(res);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: "key.delete", description });
    expect(records[0]?.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
    ]);
    const again = await recorded(() => h.post("/v2/keys.deleteKey", { keyId, permanent }, rk), rk);
    expect(again.res.status).toBe(404);
    expect(again.records).toEqual([]);
  });

  it("a change of an unknown key answers 404 and writes no record", async () => {
    const { rk } = await rootKey();
    const keyId = `key_${bs58.encode(randomBytes(16))}`;
    const calls: Array<[string, Record<string, unknown>]> = [
      ["keys.deleteKey", { keyId }],
      ["keys.updateKey", { keyId, name: "x" }],
      ["keys.updateCredits", { keyId, operation: "set", value: 1 }],
      ["keys.rerollKey", { keyId, expiration: 60_000 }],
      ["keys.addPermissions", { keyId, permissions: ["docs.read"] }],
      ["keys.setRoles", { keyId, roles: ["admin"] }],
    ];
    for (const [op, body] of calls) {
      const { res, records } = await recorded(() => h.post(`/v2/${op}`, body, rk), rk);
      expect(res.status, op).toBe(404);
      expect(records, op).toEqual([]);
    }
  });

  it("add, remove and set permissions: one record each naming the permissions added and removed; a call that changes nothing writes none", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const { keyId } = await newKey(rk, apiId);
    const [a, b, c] = [uid("p.a"), uid("p.b"), uid("p.c")];
    const permId = async (slug: string) =>
      ((await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, slug]))[0] as Json[])[0].id as string;
    const step = async (op: string, permissions: string[]) => {
      const { res, records } = await recorded(() => h.post(`/v2/keys.${op}`, { keyId, permissions }, rk), rk);
      expectOk(res);
      return records;
    };

    const added = await step("addPermissions", [a, b]);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ action: "key.add_permissions", description: "Added 2 permissions." });
    expect(added[0]?.resources).toEqual([
      { type: "key", id: keyId },
      { type: "api", id: apiId },
      // In slug order, as the key's permissions are read back.
      { type: "permission", id: await permId(a) },
      { type: "permission", id: await permId(b) },
    ]);
    // Already attached: 200, nothing changed, no record.
    expect(await step("addPermissions", [a])).toEqual([]);

    const set = await step("setPermissions", [b, c]);
    expect(set).toHaveLength(1);
    expect(set[0]).toMatchObject({ action: "key.set_permissions", description: "Added 1 permission and removed 1 permission." });
    expect(set[0]?.resources.slice(2)).toEqual([
      { type: "permission", id: await permId(c) },
      { type: "permission", id: await permId(a) },
    ]);

    const removed = await step("removePermissions", [b, a]);
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({ action: "key.remove_permissions", description: "Removed 1 permission." });
    expect(removed[0]?.resources.slice(2)).toEqual([{ type: "permission", id: await permId(b) }]);
  });

  it("add, remove and set roles: one record each naming the roles added and removed; a call that changes nothing writes none", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const { keyId } = await newKey(rk, apiId);
    const [a, b, c] = [uid("r_a"), uid("r_b"), uid("r_c")];
    const ids = { [a]: await seedRole(h, a), [b]: await seedRole(h, b), [c]: await seedRole(h, c) } as Record<string, string>;
    const step = async (op: string, roles: string[]) => {
      const { res, records } = await recorded(() => h.post(`/v2/keys.${op}`, { keyId, roles }, rk), rk);
      expectOk(res);
      return records;
    };
    const roleRes = (...names: string[]) => names.map((n) => ({ type: "role", id: ids[n] }));

    const added = await step("addRoles", [a, b]);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ action: "key.add_roles", description: "Added 2 roles." });
    expect(added[0]?.resources).toEqual([{ type: "key", id: keyId }, { type: "api", id: apiId }, ...roleRes(a, b)]);
    expect(await step("removeRoles", [c])).toEqual([]);

    const set = await step("setRoles", [b, c]);
    expect(set).toHaveLength(1);
    expect(set[0]).toMatchObject({ action: "key.set_roles", description: "Added 1 role and removed 1 role." });
    expect(set[0]?.resources.slice(2)).toEqual(roleRes(c, a));

    const removed = await step("removeRoles", [b]);
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({ action: "key.remove_roles", description: "Removed 1 role." });
    expect(removed[0]?.resources.slice(2)).toEqual(roleRes(b));
  });

  it("migrateKeys: one key.migrate record for the batch, naming every key imported but no hash", async () => {
    const { rk } = await rootKey();
    const apiId = await createApi(h, uid("api"), rk);
    const migrationId = await seedMigration(h, "sha256");
    const keys = Array.from({ length: 3 }, () => `legacy_${bs58.encode(randomBytes(16))}`);
    const hashes = keys.map((k) => createHash("sha256").update(k).digest("base64"));
    const body = { migrationId, apiId, keys: hashes.map((hash) => ({ hash, meta: { secret: META_SECRET }, credits: { remaining: CREDITS } })) };
    const { res, records } = await recorded(() => h.post("/v2/keys.migrateKeys", body, rk), rk, [...keys, ...hashes, META_SECRET, String(CREDITS)]);
    const data = expectOk(res);
    const ids = (data.migrated as Json[]).map((m) => m.keyId as string);
    expect(ids).toHaveLength(3);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: "key.migrate", description: "Imported 3 keys by their hashes." });
    expect(records[0]?.resources.slice(0, 2)).toEqual([
      { type: "api", id: apiId },
      { type: "migration", id: migrationId },
    ]);
    expect(keyOf(records[0] as AuditRecord).sort()).toEqual([...ids].sort());

    // The same hashes again: all already taken, nothing imported, no record.
    const again = await recorded(() => h.post("/v2/keys.migrateKeys", body, rk), rk);
    expect(expectOk(again.res).failed).toHaveLength(3);
    expect(again.records).toEqual([]);
  });
});

/** What counting would mistake for the request's own statements: the write-behind timers (as test/harness.ts). */
const WRITE_BEHIND = /^(INSERT INTO keys_last_used |UPDATE root_keys SET last_used_at_m = |START TRANSACTION;\nINSERT INTO analytics_)/;

/**
 * Every statement sent while fn runs, those on a transaction's connection too
 * (h.countQueries sees the pool's own calls and counts a transaction as its
 * checkout only), with BEGIN and COMMIT, which mysql2 sends as queries.
 */
async function statements(h: Harness, fn: () => Promise<void>): Promise<string[]> {
  type Fn = (...a: unknown[]) => Promise<unknown>;
  const seen: string[] = [];
  const note = (sql: unknown) => {
    const text = String(typeof sql === "object" && sql !== null && "sql" in sql ? (sql as { sql: string }).sql : sql).trim();
    if (!WRITE_BEHIND.test(text)) seen.push(text);
  };
  /** Replaces target[name] by a function that notes the statement (or `fixed`) and then calls the original. */
  const watch = (target: Record<string, Fn>, name: string, fixed?: string) => {
    const original = target[name] as Fn;
    target[name] = (...a: unknown[]) => {
      note(fixed ?? a[0]);
      return original.apply(target, a);
    };
  };
  const pool = h.db.pool as unknown as Record<string, Fn>;
  const saved = { execute: pool.execute, query: pool.query, getConnection: pool.getConnection };
  watch(pool, "execute");
  watch(pool, "query");
  const getConnection = saved.getConnection as Fn;
  pool.getConnection = async () => {
    // mysql2 wraps each checkout in a new promise connection: its methods are watched for this checkout only.
    const conn = (await getConnection.apply(pool, [])) as Record<string, Fn>;
    watch(conn, "execute");
    watch(conn, "query");
    watch(conn, "beginTransaction", "START TRANSACTION");
    watch(conn, "commit", "COMMIT");
    watch(conn, "rollback", "ROLLBACK");
    return conn;
  };
  try {
    await fn();
  } finally {
    Object.assign(pool, saved);
  }
  return seen;
}
