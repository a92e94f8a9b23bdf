// @unkey/api against keyhold: keys.migrateKeys, and verifyKey's migrationId.
// There is no operation that creates a migration: it is a row of key_migrations,
// seeded here with the storage function.
import { createHash, randomBytes } from "node:crypto";
import type { Unkey } from "@unkey/api";
import { ForbiddenErrorResponse, NotFoundErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { insertKeyMigration, type MigrationAlgorithm } from "../../src/storage/key-migrations.js";
import { expectBadRequest, expectSdkError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api keys.migrateKeys", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;
  let apiId: string;

  beforeAll(async () => {
    admin = await w.admin();
    apiId = (await admin.apis.createApi({ name: uid("legacy") })).data.apiId;
  });

  async function migration(algorithm: MigrationAlgorithm): Promise<string> {
    const id = uid("mig");
    await insertKeyMigration(h.db.pool, { id, workspaceId: h.workspaceId, algorithm, createdAt: Date.now() });
    return id;
  }

  /** A key as the other system issued it. */
  const legacyKey = (): string => `legacy_${randomBytes(20).toString("hex")}`;

  it("200 (sha256): migrated [{hash, keyId}]; the key then verifies with everything it was given", async () => {
    const migrationId = await migration("sha256");
    const key = legacyKey();
    const hash = hashKey(key);
    const externalId = uid("owner");
    const role = uid("imported_role");
    const c = await w.client([`apis.${apiId}.create_key`]);
    const res = await ok(
      c.keys.migrateKeys({
        migrationId,
        apiId,
        keys: [
          {
            hash,
            name: "imported",
            externalId,
            meta: { from: "legacy" },
            roles: [role],
            permissions: ["legacy.read"],
            expires: Date.now() + 3_600_000,
            credits: { remaining: 5 },
            ratelimits: [{ name: "legacy_limit", limit: 10, duration: 60_000, autoApply: true }],
          },
        ],
      }),
    );
    expect(res.data).toEqual({ migrated: [{ hash, keyId: expect.stringMatching(/^key_/) }], failed: [] });
    const verified = (await admin.keys.verifyKey({ key })).data;
    expect(verified).toMatchObject({
      valid: true,
      code: "VALID",
      keyId: res.data.migrated[0]?.keyId,
      name: "imported",
      meta: { from: "legacy" },
      credits: 4,
      roles: [role],
      permissions: ["legacy.read"],
      identity: { id: expect.stringMatching(/^id_/), externalId },
    });
    expect(verified.ratelimits).toEqual([expect.objectContaining({ name: "legacy_limit", remaining: 9, exceeded: false })]);
  });

  it("200: a hash already in use, or repeated in the request, is listed in failed", async () => {
    const migrationId = await migration("sha256");
    const taken = (await admin.keys.createKey({ apiId })).data.key;
    const fresh = hashKey(legacyKey());
    const res = await ok(admin.keys.migrateKeys({ migrationId, apiId, keys: [{ hash: hashKey(taken) }, { hash: fresh }, { hash: fresh }] }));
    expect(res.data).toEqual({ migrated: [{ hash: fresh, keyId: expect.stringMatching(/^key_/) }], failed: [hashKey(taken), fresh] });
  });

  it("200 (seamapi): the key verifies with migrationId, and afterwards without it", async () => {
    const migrationId = await migration("github.com/seamapi/prefixed-api-key");
    const longToken = randomBytes(24).toString("hex");
    const key = `mycorp_${randomBytes(4).toString("hex")}_${longToken}`;
    const hash = createHash("sha256").update(longToken).digest("hex");
    const res = await ok(admin.keys.migrateKeys({ migrationId, apiId, keys: [{ hash, name: "seam" }] }));
    const keyId = res.data.migrated[0]?.keyId;
    expect(keyId).toMatch(/^key_/);
    expect((await admin.keys.verifyKey({ key })).data).toEqual({ valid: false, code: "NOT_FOUND" });
    expect((await ok(admin.keys.verifyKey({ key, migrationId }))).data).toMatchObject({ valid: true, code: "VALID", keyId, name: "seam" });
    expect((await ok(admin.keys.verifyKey({ key }))).data).toMatchObject({ valid: true, keyId });
  });

  it("400: an empty keys list names `keys`; a short hash names `keys[0].hash`", async () => {
    const migrationId = await migration("sha256");
    await expectBadRequest(h, admin.keys.migrateKeys({ migrationId, apiId, keys: [] }), "keys");
    await expectBadRequest(h, admin.keys.migrateKeys({ migrationId, apiId, keys: [{ hash: "ab" }] }), "keys[0].hash");
  });

  it("401 and 403 (create_key for another API is not enough)", async () => {
    const migrationId = await migration("sha256");
    const call = (c: Unkey) => c.keys.migrateKeys({ migrationId, apiId, keys: [{ hash: hashKey(legacyKey()) }] });
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
    const other = (await admin.apis.createApi({ name: uid("other") })).data.apiId;
    await expectSdkError(h, call(await w.client([`apis.${other}.create_key`])), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  });

  it("404: an unknown apiId (api_not_found) and an unknown migrationId (migration_not_found)", async () => {
    const migrationId = await migration("sha256");
    const keys = [{ hash: hashKey(legacyKey()) }];
    await expectSdkError(
      h,
      admin.keys.migrateKeys({ migrationId, apiId: "api_doesnotexist1", keys }),
      NotFoundErrorResponse,
      404,
      "err:svc:data:api_not_found",
    );
    await expectSdkError(h, admin.keys.migrateKeys({ migrationId: uid("nomig"), apiId, keys }), NotFoundErrorResponse, 404, "err:svc:data:migration_not_found");
  });
});
