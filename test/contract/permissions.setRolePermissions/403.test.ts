// permissions.setRolePermissions needs rbac.*.add_permission_to_role AND
// rbac.*.remove_permission_from_role, plus rbac.*.create_permission when a slug
// is new (src/domain/rbac/roles.ts). A set both adds and removes, so it needs
// both grants even when this call only does one, as keys.setPermissions. A new
// slug without create_permission is a 403 (as keys.setPermissions and
// createRole), never a 404: nothing is created and the role is unchanged.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

const PATH = "/v2/permissions.setRolePermissions";
const FORBIDDEN = "err:svc:authorization:insufficient_permissions";
const ADD = "rbac.*.add_permission_to_role";
const REMOVE = "rbac.*.remove_permission_from_role";
const CREATE = "rbac.*.create_permission";

describe("permissions.setRolePermissions 403", () => {
  const h = useHarness();

  const createRole = async (permissions: string[]) => {
    const name = uid("role");
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name, permissions }, await admin(h)));
    return { roleId: roleId as string, name };
  };
  const slugsOf = async (role: string): Promise<string[]> =>
    (expectOk(await h.post("/v2/permissions.getRole", { role }, await admin(h))).permissions ?? []).map((p: { slug: string }) => p.slug);

  it.each<[string, string[], string, "add" | "clear"]>([
    ["no rbac grant", ["rbac.*.read_role", "rbac.*.create_role", CREATE], ADD, "add"],
    ["add only (a set that only adds)", [ADD, CREATE], REMOVE, "add"],
    ["remove only (a set that only clears)", [REMOVE], ADD, "clear"],
    ["the key-permission grants instead", ["rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key", CREATE], ADD, "clear"],
    ["update_role", ["rbac.*.update_role", CREATE], ADD, "add"],
  ])("a root key with %s -> 403 naming what is missing; the role is unchanged", async (_label, perms, missing, change) => {
    const a = uid("a.read");
    const { roleId } = await createRole([a]);
    const permissions = change === "clear" ? [] : [a, uid("b.read")];
    const res = await h.post(PATH, { roleId, permissions }, await h.rootKey(perms));
    expectError(h, res, 403, FORBIDDEN, `Missing permission: '${missing}'`);
    expect(await slugsOf(roleId)).toEqual([a]);
  });

  it("a new slug without rbac.*.create_permission -> 403; nothing is created or removed", async () => {
    const a = uid("a.read");
    const fresh = uid("fresh.read");
    const { roleId } = await createRole([a]);
    const res = await h.post(PATH, { roleId, permissions: [fresh] }, await h.rootKey([ADD, REMOVE]));
    expectError(h, res, 403, FORBIDDEN, `Missing permission: '${CREATE}'`);
    expect(await slugsOf(roleId)).toEqual([a]);
    expectError(h, await h.post("/v2/permissions.getPermission", { permission: fresh }, await admin(h)), 404, "err:svc:data:permission_not_found");
  });

  it("a slug that differs from an existing one only in case is new, and needs rbac.*.create_permission", async () => {
    const a = uid("mixed.read");
    const { roleId } = await createRole([a]);
    const rk = await h.rootKey([ADD, REMOVE]);
    expectError(h, await h.post(PATH, { roleId, permissions: [a.toUpperCase()] }, rk), 403, FORBIDDEN);
    // The exact slug is fine with the same key.
    expectOk(await h.post(PATH, { roleId, permissions: [a] }, rk));
  });

  it("another workspace's slug does not count as existing", async () => {
    const other = await h.rootKey(["*"], uid("set_role_other_ws"));
    const theirs = uid("theirs.read");
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: theirs }, other));
    const { roleId } = await createRole([]);
    expectError(h, await h.post(PATH, { roleId, permissions: [theirs] }, await h.rootKey([ADD, REMOVE])), 403, FORBIDDEN);
  });

  // The grants are checked before the role is looked up: a root key that may
  // not change roles cannot learn which roles exist.
  it("without the grants, an unknown role is a 403 too, not a 404", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expectError(h, await h.post(PATH, { roleId: "no_such_role", permissions: [] }, rk), 403, FORBIDDEN);
  });
});
