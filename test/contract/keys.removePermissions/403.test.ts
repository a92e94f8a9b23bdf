// keys.removePermissions needs (apis.*.update_key or apis.<apiId>.update_key) AND
// rbac.*.remove_permission_from_key (src/domain/keys/grants.ts).
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, expectOk, getKey, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.removePermissions";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

describe("keys.removePermissions 403", () => {
  const h = useHarness();

  it.each<[string, string[], string]>([
    ["no update_key", ["rbac.*.remove_permission_from_key", "apis.*.read_key", "apis.*.delete_key"], "update_key"],
    ["update_key for another API only", ["apis.api_someotherapi.update_key", "rbac.*.remove_permission_from_key"], "update_key"],
    ["update_key but no rbac grant", ["apis.*.update_key"], "rbac.*.remove_permission_from_key"],
    ["update_key and the wrong rbac grant (add)", ["apis.*.update_key", "rbac.*.add_permission_to_key"], "rbac.*.remove_permission_from_key"],
    [
      "update_key and remove_role_from_key",
      ["apis.*.update_key", "rbac.*.remove_role_from_key", "rbac.*.delete_permission"],
      "rbac.*.remove_permission_from_key",
    ],
  ])("a root key with %s -> 403 naming what is missing; the key keeps its permissions", async (_label, perms, missing) => {
    const a = uid("a.read");
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a] });
    const res = await h.post(PATH, { keyId, permissions: [a] }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain(missing);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([a]);
  });

  // The grant is checked before the slugs are looked up, so a root key that may
  // not remove permissions cannot probe which slugs exist in the workspace.
  it("an unknown slug without the rbac grant -> 403, not 404", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    const res = await h.post(PATH, { keyId, permissions: [uid("no.such.slug")] }, await h.rootKey(["apis.*.update_key"]));
    expectError(h, res, 403, FORBIDDEN, "Missing permission: 'rbac.*.remove_permission_from_key'");
  });
});
