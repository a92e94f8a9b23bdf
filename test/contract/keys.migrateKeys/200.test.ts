// keys.migrateKeys: keys issued by another system, imported
// by their hashes, keep working. sha256 migrations import our standard hash, so
// the key verifies at once; seamapi migrations import the hex SHA-256 of the
// key's last token, and the key is moved to the standard hash on its first
// verification with the migrationId.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, foreignAdmin, getKey, type Json, many, seedRole, uid, verifyKey } from "../shared/helpers.js";
import { seamapiKey, seedMigration } from "./support.js";

const standardHash = (key: string) => createHash("sha256").update(key).digest("base64");
const NOT_FOUND = { valid: false, code: "NOT_FOUND" };

describe("keys.migrateKeys 200", () => {
  const h = useHarness();

  const migrate = async (body: Record<string, unknown>, rk?: string): Promise<Json> =>
    expectOk(await h.post("/v2/keys.migrateKeys", body, rk ?? (await admin(h))));

  const row = async (keyId: string) => {
    const [rows] = await h.db.pool.query("SELECT hash, start, pending_migration_id FROM `keys` WHERE id = ?", [keyId]);
    return (rows as Array<{ hash: string; start: string; pending_migration_id: string | null }>)[0];
  };

  it("sha256: an imported standard hash verifies VALID with its name, meta, credits, rate limits, roles, permissions and identity", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const key = `legacy_${bs58.encode(randomBytes(16))}`;
    const hash = standardHash(key);
    const role = uid("imported_role");
    const externalId = uid("customer");
    const expires = Date.now() + 86_400_000;
    const data = await migrate({
      migrationId,
      apiId,
      keys: [
        {
          hash,
          name: "legacy key",
          externalId,
          meta: { plan: "gold", nested: { a: [1, 2] } },
          roles: [role],
          permissions: ["docs.read", "docs.write"],
          expires,
          enabled: true,
          credits: { remaining: 5, refill: { interval: "daily", amount: 10 } },
          ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }],
        },
      ],
    });
    expect(data).toEqual({ migrated: [{ hash, keyId: expect.stringMatching(/^key_/) }], failed: [] });
    const keyId = data.migrated[0].keyId;

    expect(await verifyKey(h, key, { permissions: "docs.read AND docs.write" })).toEqual({
      valid: true,
      code: "VALID",
      keyId,
      name: "legacy key",
      meta: { plan: "gold", nested: { a: [1, 2] } },
      expires,
      credits: 4,
      enabled: true,
      permissions: ["docs.read", "docs.write"],
      roles: [role],
      identity: { id: expect.stringMatching(/^id_/), externalId },
      ratelimits: [expect.objectContaining({ name: "requests", limit: 10, duration: 60_000, remaining: 9, exceeded: false })],
    });
    // Stored with the marker and an empty start; the standard hash needs no re-hash.
    expect(await row(keyId)).toEqual({ hash, start: "", pending_migration_id: migrationId });
    const got = expectOk(await getKey(h, keyId));
    expect(got).toMatchObject({ keyId, name: "legacy key", credits: { remaining: 4, refill: { interval: "daily", amount: 10 } } });
    expect(got.identity.externalId).toBe(externalId);
  });

  it("creates missing identities, permissions and roles (once each), and reuses existing ones", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const existingRole = uid("existing_role");
    await seedRole(h, existingRole, ["from.role"]);
    const existingExt = uid("existing_ext");
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: existingExt }, await admin(h)));
    const newRole = uid("new_role");
    const newExt = uid("new_ext");
    const newPerm = uid("new.perm");
    const keys = many(3, () => `k_${bs58.encode(randomBytes(16))}`);
    const data = await migrate({
      migrationId,
      apiId,
      keys: [
        { hash: standardHash(keys[0] as string), externalId: newExt, roles: [newRole, existingRole], permissions: [newPerm] },
        { hash: standardHash(keys[1] as string), externalId: newExt, roles: [newRole], permissions: [newPerm, newPerm] },
        { hash: standardHash(keys[2] as string), externalId: existingExt, roles: [existingRole] },
      ],
    });
    expect(data.migrated).toHaveLength(3);
    const [a, b, c] = await Promise.all(keys.map((k) => verifyKey(h, k)));
    expect(a).toMatchObject({ valid: true, roles: [existingRole, newRole].sort(), identity: { externalId: newExt } });
    expect([...a.permissions].sort()).toEqual(["from.role", newPerm].sort());
    expect(b).toMatchObject({ valid: true, roles: [newRole], permissions: [newPerm], identity: { externalId: newExt } });
    expect(b.identity.id).toBe(a.identity.id);
    expect(c).toMatchObject({ valid: true, roles: [existingRole], permissions: ["from.role"], identity: { externalId: existingExt } });

    const count = async (sql: string, params: unknown[]) => {
      const [rows] = await h.db.pool.query(sql, params);
      return Number((rows as Array<{ n: number }>)[0]?.n);
    };
    expect(await count("SELECT COUNT(*) AS n FROM identities WHERE workspace_id = ? AND external_id IN (?, ?)", [h.workspaceId, newExt, existingExt])).toBe(2);
    expect(await count("SELECT COUNT(*) AS n FROM roles WHERE workspace_id = ? AND name = ?", [h.workspaceId, newRole])).toBe(1);
    expect(await count("SELECT COUNT(*) AS n FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, newPerm])).toBe(1);
    // The created role and permission are ordinary ones.
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: newRole }, await admin(h))).name).toBe(newRole);
    expect(expectOk(await h.post("/v2/permissions.getPermission", { permission: newPerm }, await admin(h))).slug).toBe(newPerm);
  });

  it("seamapi: NOT_FOUND without the migrationId; with it VALID, the row moved to the standard hash; then VALID without it", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "github.com/seamapi/prefixed-api-key");
    const k = seamapiKey("mycorp");
    const externalId = uid("seam_user");
    const data = await migrate({
      migrationId,
      apiId,
      keys: [{ hash: k.importedHash, externalId, roles: [uid("seam_role")], permissions: ["seam.read"], credits: { remaining: 3 } }],
    });
    expect(data).toEqual({ migrated: [{ hash: k.importedHash, keyId: expect.any(String) }], failed: [] });
    const keyId = data.migrated[0].keyId;
    expect(await row(keyId)).toEqual({ hash: k.importedHash, start: "", pending_migration_id: migrationId });

    // Before its first migrated verification the key is unknown to the standard lookup.
    expect(await verifyKey(h, k.key)).toEqual(NOT_FOUND);
    // Only the long token's hash counts, but the whole key must be presented: a wrong long token is no match.
    expect(await verifyKey(h, `mycorp_${k.short}_${bs58.encode(randomBytes(24))}`, { migrationId })).toEqual(NOT_FOUND);

    expect(await verifyKey(h, k.key, { migrationId, permissions: "seam.read" })).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      credits: 2,
      permissions: ["seam.read"],
      identity: { externalId },
    });
    expect(await row(keyId)).toEqual({ hash: standardHash(k.key), start: `mycorp_${k.short.slice(0, 4)}`, pending_migration_id: null });
    expect(expectOk(await getKey(h, keyId)).start).toBe(`mycorp_${k.short.slice(0, 4)}`);

    // From now on it is a key like any other, with or without the migrationId.
    expect(await verifyKey(h, k.key)).toMatchObject({ valid: true, code: "VALID", keyId, credits: 1 });
    expect(await verifyKey(h, k.key, { migrationId })).toMatchObject({ valid: true, code: "VALID", keyId, credits: 0 });
    expect(await verifyKey(h, k.key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", keyId });
  });

  it("seamapi: hex in upper case is stored in lower case and the key verifies; the answer names the hash as sent", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "github.com/seamapi/prefixed-api-key");
    const k = seamapiKey("acme");
    const sent = k.importedHash.toUpperCase();
    const data = await migrate({ migrationId, apiId, keys: [{ hash: sent }] });
    expect(data).toEqual({ migrated: [{ hash: sent, keyId: expect.any(String) }], failed: [] });
    const { keyId } = data.migrated[0];
    expect((await row(keyId))?.hash).toBe(k.importedHash);
    // The same hash in lower case is the same key: in use now.
    expect(await migrate({ migrationId, apiId, keys: [{ hash: k.importedHash }] })).toEqual({ migrated: [], failed: [k.importedHash] });
    expect(await verifyKey(h, k.key, { migrationId })).toMatchObject({ valid: true, keyId });
  });

  it("a key whose identity is deleted between being created and read back still goes in with an identity", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const key = `idv_${bs58.encode(randomBytes(16))}`;
    const externalId = uid("vanishing");
    const rk = await admin(h);
    // A concurrent identities.deleteIdentity lands right after the transaction that
    // created the identity (and its audit record) commits, before the key goes in.
    type Conn = Record<"query" | "execute", (sql: unknown, ...rest: unknown[]) => Promise<unknown>> & { commit: () => Promise<void> };
    const pool = h.db.pool as unknown as { getConnection: () => Promise<Conn> };
    const getConnection = pool.getConnection;
    let armed = true;
    pool.getConnection = async () => {
      const conn = await getConnection.call(pool);
      let madeIdentity = false;
      for (const m of ["execute", "query"] as const) {
        const run = conn[m];
        conn[m] = async (sql, ...rest) => {
          if (typeof sql === "string" && sql.startsWith("INSERT IGNORE INTO identities")) madeIdentity = true;
          return run.call(conn, sql, ...rest);
        };
      }
      const commit = conn.commit;
      conn.commit = async () => {
        await commit.call(conn);
        if (armed && madeIdentity) {
          armed = false;
          expectOk(await h.post("/v2/identities.deleteIdentity", { identity: externalId }, rk));
        }
      };
      return conn;
    };
    try {
      await migrate({ migrationId, apiId, keys: [{ hash: standardHash(key), externalId }] }, rk);
    } finally {
      pool.getConnection = getConnection;
    }
    expect(armed).toBe(false);
    const verified = await verifyKey(h, key);
    expect(verified).toMatchObject({ valid: true, identity: { externalId } });
    // Linked to the live identity made again, not to the deleted one.
    expect(expectOk(await h.post("/v2/identities.getIdentity", { identity: externalId }, rk)).id).toBe(verified.identity.id);
  });

  it("seamapi: a rerolled migrated key is an ordinary key", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "github.com/seamapi/prefixed-api-key");
    const k = seamapiKey("acme");
    const { keyId } = (await migrate({ migrationId, apiId, keys: [{ hash: k.importedHash }] })).migrated[0];
    expect(await verifyKey(h, k.key, { migrationId })).toMatchObject({ valid: true, keyId });
    const rerolled = expectOk(await h.post("/v2/keys.rerollKey", { keyId, expiration: 0 }, await admin(h)));
    expect(await verifyKey(h, rerolled.key)).toMatchObject({ valid: true, keyId: rerolled.keyId });
  });

  it("a hash repeated in the request is imported once and listed in failed after that", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const [x, y] = [`a_${bs58.encode(randomBytes(16))}`, `b_${bs58.encode(randomBytes(16))}`];
    const [hx, hy] = [standardHash(x), standardHash(y)];
    const data = await migrate({ migrationId, apiId, keys: [{ hash: hx, name: "first" }, { hash: hx, name: "second" }, { hash: hy }, { hash: hx }] });
    expect(data).toEqual({
      migrated: [
        { hash: hx, keyId: expect.any(String) },
        { hash: hy, keyId: expect.any(String) },
      ],
      failed: [hx, hx],
    });
    expect(await verifyKey(h, x)).toMatchObject({ valid: true, name: "first" });
  });

  it("a hash already in use (a created key, an earlier import, another workspace's key) is listed in failed with 200; the rest go in", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const created = await createKey(h, apiId);
    const foreign = await foreignAdmin(h);
    const theirApi = await createApi(h, uid("their_api"), foreign);
    const theirs = expectOk(await h.post("/v2/keys.createKey", { apiId: theirApi }, foreign));
    const earlier = `e_${bs58.encode(randomBytes(16))}`;
    await migrate({ migrationId, apiId, keys: [{ hash: standardHash(earlier) }] });
    const fresh = `f_${bs58.encode(randomBytes(16))}`;

    const hashes = [standardHash(created.key), standardHash(theirs.key), standardHash(earlier), standardHash(fresh)];
    const data = await migrate({ migrationId, apiId, keys: hashes.map((hash) => ({ hash, name: "import" })) });
    expect(data).toEqual({ migrated: [{ hash: hashes[3], keyId: expect.any(String) }], failed: hashes.slice(0, 3) });
    // The keys that were there are untouched.
    expect(await verifyKey(h, created.key)).toMatchObject({ valid: true, keyId: created.keyId });
    expect((await verifyKey(h, created.key)).name).toBeUndefined();
    expect(await verifyKey(h, fresh)).toMatchObject({ valid: true, name: "import" });
  });

  it("two imports of the same hashes at once: each key goes in once, whole, and the other answer lists it in failed", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const keys = many(200, (i) => ({
      hash: standardHash(`race${i}_${bs58.encode(randomBytes(16))}`),
      permissions: ["race.read"],
      ratelimits: [{ name: "race_rl", limit: 5, duration: 60_000 }],
    }));
    const rk = await admin(h);
    const answers = await Promise.all([0, 1].map(() => h.post("/v2/keys.migrateKeys", { migrationId, apiId, keys }, rk).then(expectOk)));
    for (const k of keys) {
      const inA = answers.map((d) => d.migrated.some((m: Json) => m.hash === k.hash));
      expect(inA.filter(Boolean), k.hash).toHaveLength(1);
      expect(answers.map((d) => d.failed.includes(k.hash))).toEqual(inA.map((x) => !x));
    }
    // Every key row has its permission and its rate limit.
    const [rows] = await h.db.pool.query(
      `SELECT k.id, (SELECT COUNT(*) FROM keys_permissions kp WHERE kp.key_id = k.id) AS p, (SELECT COUNT(*) FROM ratelimits r WHERE r.key_id = k.id) AS r
         FROM \`keys\` k WHERE k.api_id = ?`,
      [apiId],
    );
    const counts = rows as Array<{ p: number; r: number }>;
    expect(counts).toHaveLength(200);
    expect(counts.every((c) => Number(c.p) === 1 && Number(c.r) === 1)).toBe(true);
  });

  it("every key failing is still a 200 with migrated: [] (both lists are always sent)", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const { key } = await createKey(h, apiId);
    const res = await h.post("/v2/keys.migrateKeys", { migrationId, apiId, keys: [{ hash: standardHash(key) }] }, await admin(h));
    expect(expectOk(res)).toEqual({ migrated: [], failed: [standardHash(key)] });
  });

  it("enabled:false imports a DISABLED key; an expiry in the past an EXPIRED one", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const [off, old] = [`o_${bs58.encode(randomBytes(16))}`, `x_${bs58.encode(randomBytes(16))}`];
    await migrate({
      migrationId,
      apiId,
      keys: [
        { hash: standardHash(off), enabled: false },
        { hash: standardHash(old), expires: 0 },
      ],
    });
    expect(await verifyKey(h, off)).toMatchObject({ valid: false, code: "DISABLED" });
    expect(await verifyKey(h, old)).toMatchObject({ valid: false, code: "EXPIRED" });
  });

  it("1,000 keys (the upper bound) in one request, each with its own identity, role and permission", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const keys = many(1000, (i) => `bulk${i}_${bs58.encode(randomBytes(16))}`);
    const data = await migrate({
      migrationId,
      apiId,
      keys: keys.map((k, i) => ({
        hash: standardHash(k),
        externalId: `bulk_user_${i % 100}`,
        roles: [`bulk_role_${i % 10}`],
        permissions: [`bulk.perm.${i % 50}`],
        ratelimits: [{ name: "bulk_rl", limit: 5, duration: 60_000 }],
      })),
    });
    expect(data.failed).toEqual([]);
    expect(data.migrated.map((m: Json) => m.hash)).toEqual(keys.map(standardHash));
    expect(new Set(data.migrated.map((m: Json) => m.keyId)).size).toBe(1000);
    for (const i of [0, 537, 999]) {
      expect(await verifyKey(h, keys[i] as string)).toMatchObject({
        valid: true,
        keyId: data.migrated[i].keyId,
        roles: [`bulk_role_${i % 10}`],
        permissions: [`bulk.perm.${i % 50}`],
        identity: { externalId: `bulk_user_${i % 100}` },
        ratelimits: [expect.objectContaining({ name: "bulk_rl", remaining: 4 })],
      });
    }
    const listed = expectOk(await h.post("/v2/keys.listKeys", { apiId, limit: 100 }, await admin(h)), { pagination: true });
    expect(listed.keys).toHaveLength(100);
  });

  it("a create_key grant for this one API (apis.<apiId>.create_key) is enough", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const rk = await h.rootKey([`apis.${apiId}.create_key`]);
    const hash = standardHash(`g_${bs58.encode(randomBytes(16))}`);
    expect(await migrate({ migrationId, apiId, keys: [{ hash, externalId: uid("x"), roles: [uid("r")], permissions: [uid("p")] }] }, rk)).toEqual({
      migrated: [{ hash, keyId: expect.any(String) }],
      failed: [],
    });
  });
});
