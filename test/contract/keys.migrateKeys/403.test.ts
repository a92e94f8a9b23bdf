// keys.migrateKeys needs apis.*.create_key or apis.<apiId>.create_key; the
// identities, roles and permissions it creates need no grant of their own
// (docs/permissions.md, "Which operation needs which grant"). A refused request
// creates nothing, shared rows included.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, expectError, listedKeyIds, uid } from "../shared/helpers.js";
import { seedMigration } from "./support.js";

describe("keys.migrateKeys 403", () => {
  const h = useHarness();

  it.each([
    [
      "no create_key at all",
      () => ["apis.*.read_api", "apis.*.read_key", "apis.*.verify_key", "apis.*.update_key", "rbac.*.create_role", "identity.*.create_identity"],
    ],
    ["create_key for another API only", () => ["apis.api_someotherapi.create_key"]],
    ["create_api, which is not create_key", () => ["apis.*.create_api"]],
  ])("a root key with %s -> 403 insufficient_permissions, and nothing is created", async (_label, perms) => {
    const apiId = await createApi(h);
    const migrationId = await seedMigration(h, "sha256");
    const [ext, role, perm] = [uid("ext"), uid("role"), uid("perm")];
    const hash = createHash("sha256").update(randomBytes(16)).digest("base64");
    const res = await h.post(
      "/v2/keys.migrateKeys",
      { migrationId, apiId, keys: [{ hash, externalId: ext, roles: [role], permissions: [perm] }] },
      await h.rootKey(perms()),
    );
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
    const [rows] = await h.db.pool.query(
      "SELECT (SELECT COUNT(*) FROM identities WHERE external_id = ?) + (SELECT COUNT(*) FROM roles WHERE name = ?) + (SELECT COUNT(*) FROM permissions WHERE slug = ?) AS n",
      [ext, role, perm],
    );
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  });

  it("a create_key grant for another API refuses this one even for a migration that exists", async () => {
    const [mine, other] = [await createApi(h), await createApi(h)];
    const migrationId = await seedMigration(h, "github.com/seamapi/prefixed-api-key");
    const res = await h.post(
      "/v2/keys.migrateKeys",
      { migrationId, apiId: mine, keys: [{ hash: "a".repeat(64) }] },
      await h.rootKey([`apis.${other}.create_key`]),
    );
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(await listedKeyIds(h, mine)).toEqual([]);
  });
});
