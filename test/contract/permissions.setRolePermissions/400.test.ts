// permissions.setRolePermissions request rules: roleId (an id or a name) 1 to 255
// characters, no pattern (a role name may hold any character); permissions
// required, `[]` allowed, at most 1000, each slug [1..128] with the slug pattern.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectInvalid, expectOk, uid } from "../shared/helpers.js";

const PATH = "/v2/permissions.setRolePermissions";
const ROLE = "role_doesnotexist";

describe("permissions.setRolePermissions 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["roleId missing", { permissions: ["a.b"] }, "roleId"],
    ["roleId empty", { roleId: "", permissions: [] }, "roleId"],
    ["roleId of 256 characters", { roleId: "r".repeat(256), permissions: [] }, "roleId"],
    ["roleId not a string", { roleId: 7, permissions: [] }, "roleId"],
    ["roleId null", { roleId: null, permissions: [] }, "roleId"],
    ["permissions null", { roleId: ROLE, permissions: null }, "permissions"],
    ["permissions a string", { roleId: ROLE, permissions: "a.b" }, "permissions"],
    ["permissions an object", { roleId: ROLE, permissions: {} }, "permissions"],
    ["1001 permissions", { roleId: ROLE, permissions: Array.from({ length: 1001 }, (_, i) => `p.${i}`) }, "permissions"],
    ["an empty slug", { roleId: ROLE, permissions: [""] }, "permissions[0]"],
    ["a slug of 129 characters", { roleId: ROLE, permissions: ["p".repeat(129)] }, "permissions[0]"],
    ["a slug with a space", { roleId: ROLE, permissions: ["ok", "not ok"] }, "permissions[1]"],
    ["a slug with a trailing space", { roleId: ROLE, permissions: ["docs.read "] }, "permissions[0]"],
    ["a slug with a slash", { roleId: ROLE, permissions: ["a/b"] }, "permissions[0]"],
    ["a slug that is a number", { roleId: ROLE, permissions: [1] }, "permissions[0]"],
    // Unkey's older field name for the role is not an alias here: a misspelt field is refused, never ignored.
    ["an unknown field", { roleId: ROLE, role: "admin", permissions: [] }, "role"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });

  it("names every offending field at once", async () => {
    const res = await h.post(PATH, { roleId: "", permissions: ["a b"] }, await admin(h));
    for (const field of ["roleId", "permissions[0]"]) expectInvalid(h, res, field);
  });

  it("a bad item rejects the whole request: the role keeps its permissions and no slug is created", async () => {
    const rk = await admin(h);
    const name = uid("role");
    expectOk(await h.post("/v2/permissions.createRole", { name, permissions: ["keep.me"] }, rk));
    const fresh = uid("fresh.slug");
    expectInvalid(h, await h.post(PATH, { roleId: name, permissions: [fresh, "bad slug"] }, rk), "permissions[1]");
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: name }, rk)).permissions.map((p: { slug: string }) => p.slug)).toEqual(["keep.me"]);
    expectError(h, await h.post("/v2/permissions.getPermission", { permission: fresh }, rk), 404, "err:svc:data:permission_not_found");
  });

  it("validates before it checks the permission", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expectInvalid(h, await h.post(PATH, { roleId: "", permissions: [] }, rk), "roleId");
  });
});
