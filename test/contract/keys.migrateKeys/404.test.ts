// keys.migrateKeys: an unknown API is 404 api_not_found (as in createKey), an
// unknown migration 404 migration_not_found; another workspace's API or
// migration is unknown. Nothing is created, shared rows included.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk, listedKeyIds, uid } from "../shared/helpers.js";
import { seedMigration } from "./support.js";

describe("keys.migrateKeys 404", () => {
  const h = useHarness();

  const body = (migrationId: string, apiId: string) => {
    const tag = uid("nothing");
    return {
      tag,
      body: {
        migrationId,
        apiId,
        keys: [{ hash: createHash("sha256").update(randomBytes(16)).digest("base64"), externalId: tag, roles: [tag], permissions: [tag] }],
      },
    };
  };

  /** No identity, role or permission named `tag` was created. */
  const nothingNamed = async (tag: string) => {
    const [rows] = await h.db.pool.query(
      "SELECT (SELECT COUNT(*) FROM identities WHERE external_id = ?) + (SELECT COUNT(*) FROM roles WHERE name = ?) + (SELECT COUNT(*) FROM permissions WHERE slug = ?) AS n",
      [tag, tag, tag],
    );
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  };

  it.each([
    ["an unknown apiId", "api_doesnotexist0000"],
    ["an apiId of 255 characters (valid, but no such API)", "a".repeat(255)],
  ])("%s -> 404 err:svc:data:api_not_found", async (_label, apiId) => {
    const { tag, body: b } = body(await seedMigration(h, "sha256"), apiId);
    const res = await h.post("/v2/keys.migrateKeys", b, await admin(h));
    expectError(h, res, 404, "err:svc:data:api_not_found");
    expect(res.body.error.title).toBe("Not Found");
    await nothingNamed(tag);
  });

  it("a deleted API -> 404 api_not_found", async () => {
    const apiId = await createApi(h);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, await admin(h)));
    const { tag, body: b } = body(await seedMigration(h, "sha256"), apiId);
    expectError(h, await h.post("/v2/keys.migrateKeys", b, await admin(h)), 404, "err:svc:data:api_not_found");
    await nothingNamed(tag);
  });

  it("another workspace's API -> 404 api_not_found, even with a migration of the caller's own", async () => {
    const mine = await createApi(h);
    const ws = uid("other_ws");
    const outsider = await h.rootKey(["*"], ws);
    const [rows] = await h.db.pool.query("SELECT id FROM workspaces WHERE name = ?", [ws]);
    const outsiderWs = (rows as Array<{ id: string }>)[0]?.id as string;
    const { tag, body: b } = body(await seedMigration(h, "sha256", outsiderWs), mine);
    expectError(h, await h.post("/v2/keys.migrateKeys", b, outsider), 404, "err:svc:data:api_not_found");
    expect(await listedKeyIds(h, mine)).toEqual([]);
    await nothingNamed(tag);
  });

  it.each([
    ["an unknown migrationId", "mig_doesnotexist0000"],
    ["a migrationId of 255 characters (valid, but no such migration)", "m".repeat(255)],
  ])("%s -> 404 err:svc:data:migration_not_found, and nothing is created", async (_label, migrationId) => {
    const apiId = await createApi(h);
    const { tag, body: b } = body(migrationId, apiId);
    const res = await h.post("/v2/keys.migrateKeys", b, await admin(h));
    expectError(h, res, 404, "err:svc:data:migration_not_found");
    expect(res.body.error.title).toBe("Not Found");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
    await nothingNamed(tag);
  });

  it("another workspace's migration -> 404 migration_not_found", async () => {
    const apiId = await createApi(h);
    const { tag, body: b } = body(await seedMigration(h, "sha256", "ws_someoneelse"), apiId);
    expectError(h, await h.post("/v2/keys.migrateKeys", b, await admin(h)), 404, "err:svc:data:migration_not_found");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
    await nothingNamed(tag);
  });
});
