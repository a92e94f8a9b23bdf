// keys.verifyKey with migrationId (src/domain/keys/migrated-lookup.ts): a key imported by
// keys.migrateKeys is checked against its migration only for a caller of the
// migration's workspace that may verify the key's API. Anyone else, and an
// unknown migration, gets NOT_FOUND, and the imported row stays as it was.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { seamapiKey, seedMigration } from "../keys.migrateKeys/support.js";
import { admin, createApi, expectOk, uid, verifyKey } from "../shared/helpers.js";

const NOT_FOUND = { valid: false, code: "NOT_FOUND" };
const SEAMAPI = "github.com/seamapi/prefixed-api-key";

describe("keys.verifyKey 200 with migrationId", () => {
  const h = useHarness();

  /** A seamapi key imported into a new API of this workspace. */
  async function imported() {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, SEAMAPI);
    const k = seamapiKey("acme");
    const res = await h.post("/v2/keys.migrateKeys", { migrationId, apiId, keys: [{ hash: k.importedHash }] }, await admin(h));
    return { apiId, migrationId, ...k, keyId: expectOk(res).migrated[0].keyId as string };
  }

  const pendingOf = async (keyId: string) => {
    const [rows] = await h.db.pool.query("SELECT hash, pending_migration_id FROM `keys` WHERE id = ?", [keyId]);
    return (rows as Array<{ hash: string; pending_migration_id: string | null }>)[0];
  };

  it("another workspace's root key, passing the key's migrationId -> NOT_FOUND, and the key stays pending", async () => {
    const k = await imported();
    const outsider = await h.rootKey(["*"], uid("other_ws"));
    expect(await verifyKey(h, k.key, { migrationId: k.migrationId }, outsider)).toEqual(NOT_FOUND);
    expect(await pendingOf(k.keyId)).toEqual({ hash: k.importedHash, pending_migration_id: k.migrationId });
    // Its own workspace's caller still gets it.
    expect(await verifyKey(h, k.key, { migrationId: k.migrationId })).toMatchObject({ valid: true, keyId: k.keyId });
  });

  it("a migration of another workspace, or an unknown one -> NOT_FOUND, and the key stays pending", async () => {
    const k = await imported();
    const theirs = await seedMigration(h, SEAMAPI, "ws_someoneelse");
    for (const migrationId of [theirs, "mig_doesnotexist0000", ""]) {
      expect(await verifyKey(h, k.key, { migrationId })).toEqual(NOT_FOUND);
    }
    expect(await pendingOf(k.keyId)).toEqual({ hash: k.importedHash, pending_migration_id: k.migrationId });
  });

  it("another migration of the same workspace does not find the key", async () => {
    const k = await imported();
    const other = await seedMigration(h, SEAMAPI);
    expect(await verifyKey(h, k.key, { migrationId: other })).toEqual(NOT_FOUND);
    expect((await pendingOf(k.keyId))?.pending_migration_id).toBe(k.migrationId);
  });

  it("a root key that may verify other APIs only -> NOT_FOUND, and the key is not moved", async () => {
    const k = await imported();
    const rk = await h.rootKey(["apis.api_someotherapi.verify_key"]);
    expect(await verifyKey(h, k.key, { migrationId: k.migrationId }, rk)).toEqual(NOT_FOUND);
    expect((await pendingOf(k.keyId))?.hash).toBe(k.importedHash);
    const allowed = await h.rootKey([`apis.${k.apiId}.verify_key`]);
    expect(await verifyKey(h, k.key, { migrationId: k.migrationId }, allowed)).toMatchObject({ valid: true, keyId: k.keyId });
  });

  it("a key not shaped prefix_short_long with the right long token -> NOT_FOUND, the row untouched; the real key then verifies", async () => {
    const k = await imported();
    // seamapi's hash covers the long token alone; none of these is a key that library issues.
    for (const variant of [
      k.long,
      `x_${k.long}`,
      `evil_xxxx_${k.short}_${k.long}`,
      `acme_live_${k.short}_${k.long}`,
      `_${k.short}_${k.long}`,
      `acme__${k.long}`,
    ]) {
      expect(await verifyKey(h, variant, { migrationId: k.migrationId }), variant).toEqual(NOT_FOUND);
      expect(await pendingOf(k.keyId)).toEqual({ hash: k.importedHash, pending_migration_id: k.migrationId });
    }
    expect(await verifyKey(h, k.key, { migrationId: k.migrationId })).toMatchObject({ valid: true, keyId: k.keyId });
    const [rows] = await h.db.pool.query("SELECT start FROM `keys` WHERE id = ?", [k.keyId]);
    expect((rows as Array<{ start: string }>)[0]?.start).toBe(`acme_${k.short.slice(0, 4)}`);
  });

  it("a bad key repeated with a migrationId costs no query the second time (seamapi, sha256, unknown migration)", async () => {
    const k = await imported();
    const sha = await seedMigration(h, "sha256");
    const rk = await admin(h);
    const cases: Array<[string, string]> = [
      [seamapiKey("acme").key, k.migrationId],
      [`sk_${bs58.encode(randomBytes(16))}`, sha],
      [`sk_${bs58.encode(randomBytes(16))}`, "mig_doesnotexist0000"],
    ];
    for (const [key, migrationId] of cases) {
      expect(await verifyKey(h, key, { migrationId }, rk)).toEqual(NOT_FOUND);
      const queries = await h.countQueries(async () => {
        expect(await verifyKey(h, key, { migrationId }, rk)).toEqual(NOT_FOUND);
      });
      expect(queries, `${migrationId}: ${key}`).toBe(0);
    }
  });

  it("a key remembered as missed under a migration verifies at once when this instance imports it", async () => {
    const apiId = await createApi(h);
    const rk = await admin(h);
    const seam = await seedMigration(h, SEAMAPI);
    const k = seamapiKey("late");
    const sha = await seedMigration(h, "sha256");
    const plain = `late_${bs58.encode(randomBytes(16))}`;
    expect(await verifyKey(h, k.key, { migrationId: seam }, rk)).toEqual(NOT_FOUND);
    expect(await verifyKey(h, plain, { migrationId: sha }, rk)).toEqual(NOT_FOUND);
    expectOk(await h.post("/v2/keys.migrateKeys", { migrationId: seam, apiId, keys: [{ hash: k.importedHash }] }, rk));
    expectOk(await h.post("/v2/keys.migrateKeys", { migrationId: sha, apiId, keys: [{ hash: createHash("sha256").update(plain).digest("base64") }] }, rk));
    expect(await verifyKey(h, k.key, { migrationId: seam }, rk)).toMatchObject({ valid: true, code: "VALID" });
    expect(await verifyKey(h, plain, { migrationId: sha }, rk)).toMatchObject({ valid: true, code: "VALID" });
  });

  it("first verifications on two instances at once both answer VALID; the key is moved once", async () => {
    const k = await imported();
    const other = await h.otherInstance();
    const rk = await admin(h);
    const [a, b] = await Promise.all([
      h.post("/v2/keys.verifyKey", { key: k.key, migrationId: k.migrationId }, rk),
      other.post("/v2/keys.verifyKey", { key: k.key, migrationId: k.migrationId }, rk),
    ]);
    expect(expectOk(a)).toMatchObject({ valid: true, keyId: k.keyId });
    expect(expectOk(b)).toMatchObject({ valid: true, keyId: k.keyId });
    expect(await pendingOf(k.keyId)).toEqual({ hash: createHash("sha256").update(k.key).digest("base64"), pending_migration_id: null });
  });

  it("an instance that remembered the key as unknown finds it with the migrationId once another instance imported it", async () => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const key = `late_${uid("k")}`;
    // This instance looks the key up first: unknown.
    expect(await verifyKey(h, key)).toEqual(NOT_FOUND);
    const other = await h.otherInstance();
    const hash = createHash("sha256").update(key).digest("base64");
    expectOk(await other.post("/v2/keys.migrateKeys", { migrationId, apiId, keys: [{ hash }] }, await admin(h)));
    expect(await verifyKey(h, key, { migrationId })).toMatchObject({ valid: true, code: "VALID" });
  });
});
