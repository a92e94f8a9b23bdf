// keys.setRoles needs (apis.*.update_key or apis.<apiId>.update_key) AND
// rbac.*.add_role_to_key AND rbac.*.remove_role_from_key. Unkey asks for
// update_key only; keyhold applies one rule to all six grant operations
// (src/domain/keys/grants.ts). A set both adds and removes, so it needs both
// grants even when this call only does one of them.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, expectOk, getKey, seedRole, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.setRoles";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";
const ADD = "rbac.*.add_role_to_key";
const REMOVE = "rbac.*.remove_role_from_key";

describe("keys.setRoles 403", () => {
  const h = useHarness();

  it.each<[string, string[], string, "add" | "clear"]>([
    ["no update_key", [ADD, REMOVE, "apis.*.read_key"], "update_key", "add"],
    ["update_key for another API only", ["apis.api_someotherapi.update_key", ADD, REMOVE], "update_key", "add"],
    ["update_key only (enough in Unkey, not here)", ["apis.*.update_key"], ADD, "clear"],
    ["update_key and add only (a set that only adds)", ["apis.*.update_key", ADD], REMOVE, "add"],
    ["update_key and remove only (a set that only clears)", ["apis.*.update_key", REMOVE], ADD, "clear"],
    ["update_key and the permission grants", ["apis.*.update_key", "rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key"], ADD, "clear"],
  ])("a root key with %s -> 403 naming what is missing; the key keeps its roles", async (_label, perms, missing, change) => {
    const [had, other] = [uid("had"), uid("other")];
    await seedRole(h, had);
    await seedRole(h, other);
    const { keyId } = await createKey(h, await createApi(h), { roles: [had] });
    const roles = change === "clear" ? [] : [had, other];
    const res = await h.post(PATH, { keyId, roles }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN);
    expect(res.body.error.detail).toContain(missing);
    expect(expectOk(await getKey(h, keyId)).roles).toEqual([had]);
  });
});
