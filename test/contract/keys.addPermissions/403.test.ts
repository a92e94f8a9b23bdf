// keys.addPermissions needs (apis.*.update_key or apis.<apiId>.update_key) AND
// rbac.*.add_permission_to_key, plus rbac.*.create_permission when a slug is new
// (one rule for all six grant operations: src/domain/keys/grants.ts).
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, expectOk, getKey, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.addPermissions";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("keys.addPermissions 403", () => {
  const h = useHarness();

  it.each<[string, string[], string]>([
    ["no update_key", ["rbac.*.add_permission_to_key", "rbac.*.create_permission", "apis.*.read_key", "apis.*.create_key"], "update_key"],
    ["update_key for another API only", ["apis.api_someotherapi.update_key", "rbac.*.add_permission_to_key", "rbac.*.create_permission"], "update_key"],
    ["update_key but no rbac grant", ["apis.*.update_key", "rbac.*.create_permission"], "rbac.*.add_permission_to_key"],
    [
      "update_key and the wrong rbac grant (remove)",
      ["apis.*.update_key", "rbac.*.remove_permission_from_key", "rbac.*.create_permission"],
      "rbac.*.add_permission_to_key",
    ],
    ["update_key and add_role_to_key", ["apis.*.update_key", "rbac.*.add_role_to_key", "rbac.*.create_permission"], "rbac.*.add_permission_to_key"],
  ])("a root key with %s -> 403 naming what is missing; the key is unchanged", async (_label, perms, missing) => {
    const apiId = await createApi(h);
    const existing = uid("existing.perm");
    const { keyId } = await createKey(h, apiId, { permissions: [existing] });
    const fresh = uid("fresh.perm");
    const res = await h.post(PATH, { keyId, permissions: [existing, fresh] }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain(missing);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([existing]);
  });

  it("a new slug without rbac.*.create_permission -> 403, and the slug is not created", async () => {
    const apiId = await createApi(h);
    const existing = uid("existing.perm");
    await createKey(h, apiId, { permissions: [existing] }); // the slug now exists
    const other = await createKey(h, apiId);
    const fresh = uid("fresh.perm");
    const rk = await h.rootKey(["apis.*.update_key", "rbac.*.add_permission_to_key"]);
    const res = await h.post(PATH, { keyId: other.keyId, permissions: [existing, fresh] }, rk);
    expectError(h, res, 403, FORBIDDEN, "Missing permission: 'rbac.*.create_permission'");
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, fresh]);
    expect(rows).toEqual([]);
    expect(expectOk(await getKey(h, other.keyId)).permissions).toBeUndefined();
    // The same root key may attach slugs that already exist.
    expect(expectOk(await h.post(PATH, { keyId: other.keyId, permissions: [existing] }, rk))).toMatchObject([{ slug: existing }]);
  });
});
