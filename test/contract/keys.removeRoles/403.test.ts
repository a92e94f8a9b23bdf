// keys.removeRoles needs (apis.*.update_key or apis.<apiId>.update_key) AND
// rbac.*.remove_role_from_key. Unkey asks for update_key only; keyhold applies
// one rule to all six grant operations (src/domain/keys/grants.ts).
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, expectOk, getKey, seedRole, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.removeRoles";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("keys.removeRoles 403", () => {
  const h = useHarness();

  it.each<[string, string[], string]>([
    ["no update_key", ["rbac.*.remove_role_from_key", "apis.*.read_key"], "update_key"],
    ["update_key for another API only", ["apis.api_someotherapi.update_key", "rbac.*.remove_role_from_key"], "update_key"],
    ["update_key only (enough in Unkey, not here)", ["apis.*.update_key"], "rbac.*.remove_role_from_key"],
    ["update_key and the wrong rbac grant (add)", ["apis.*.update_key", "rbac.*.add_role_to_key"], "rbac.*.remove_role_from_key"],
    ["update_key and delete_role", ["apis.*.update_key", "rbac.*.delete_role", "rbac.*.remove_permission_from_key"], "rbac.*.remove_role_from_key"],
  ])("a root key with %s -> 403 naming what is missing; the key keeps its roles", async (_label, perms, missing) => {
    const role = uid("role");
    await seedRole(h, role);
    const { keyId } = await createKey(h, await createApi(h), { roles: [role] });
    const res = await h.post(PATH, { keyId, roles: [role] }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain(missing);
    expect(expectOk(await getKey(h, keyId)).roles).toEqual([role]);
  });

  // The grant is checked before the names are looked up, so a root key that may
  // not take roles away cannot probe which roles exist.
  it("an unknown role without the rbac grant -> 403, not 404", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    const res = await h.post(PATH, { keyId, roles: [uid("ghost")] }, await h.rootKey(["apis.*.update_key"]));
    expectError(h, res, 403, FORBIDDEN, "Missing permission: 'rbac.*.remove_role_from_key'");
  });
});
