// keys.setPermissions needs (apis.*.update_key or apis.<apiId>.update_key) AND
// rbac.*.add_permission_to_key AND rbac.*.remove_permission_from_key, plus
// rbac.*.create_permission when a slug is new (src/domain/keys/grants.ts). A set both
// adds and removes, so it needs both grants even when this call only does one.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, expectOk, getKey, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.setPermissions";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";
const ADD = "rbac.*.add_permission_to_key";
const REMOVE = "rbac.*.remove_permission_from_key";
const CREATE = "rbac.*.create_permission";

describe("keys.setPermissions 403", () => {
  const h = useHarness();

  it.each<[string, string[], string, "add" | "clear"]>([
    ["no update_key", [ADD, REMOVE, CREATE, "apis.*.read_key"], "update_key", "add"],
    ["update_key for another API only", ["apis.api_someotherapi.update_key", ADD, REMOVE, CREATE], "update_key", "add"],
    ["update_key and add only (a set that only adds)", ["apis.*.update_key", ADD, CREATE], REMOVE, "add"],
    ["update_key and remove only (a set that only clears)", ["apis.*.update_key", REMOVE], ADD, "clear"],
    ["update_key and no rbac grant", ["apis.*.update_key", CREATE], ADD, "clear"],
    ["update_key and the role grants", ["apis.*.update_key", "rbac.*.add_role_to_key", "rbac.*.remove_role_from_key"], ADD, "clear"],
  ])("a root key with %s -> 403 naming what is missing; the key is unchanged", async (_label, perms, missing, change) => {
    const a = uid("a.read");
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a] });
    const permissions = change === "clear" ? [] : [a, uid("fresh.read")];
    const res = await h.post(PATH, { keyId, permissions }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain(missing);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([a]);
  });

  it("a new slug without rbac.*.create_permission -> 403; nothing is created or removed", async () => {
    const a = uid("a.read");
    const fresh = uid("fresh.read");
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a] });
    const res = await h.post(PATH, { keyId, permissions: [fresh] }, await h.rootKey(["apis.*.update_key", ADD, REMOVE]));
    expectError(h, res, 403, FORBIDDEN, `Missing permission: '${CREATE}'`);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([a]);
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, fresh]);
    expect(rows).toEqual([]);
  });
});
