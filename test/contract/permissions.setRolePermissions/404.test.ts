// permissions.setRolePermissions on a role that cannot be found: 404
// role_not_found, with nothing created or changed. Unknown slugs are created
// (or refused with 403 without rbac.*.create_permission), never a 404.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin, uid } from "../shared/helpers.js";

const PATH = "/v2/permissions.setRolePermissions";
const NOT_FOUND = "err:svc:data:role_not_found";

describe("permissions.setRolePermissions 404", () => {
  const h = useHarness();
  const set = async (roleId: string, permissions: string[], rk?: string) => h.post(PATH, { roleId, permissions }, rk ?? (await admin(h)));

  it("an unknown id or name -> 404 role_not_found (with [] too), and no permission is created", async () => {
    const slug = uid("never.created");
    expectError(
      h,
      await h.post(PATH, { roleId: "role_doesnotexist", permissions: [slug] }, await admin(h)),
      404,
      NOT_FOUND,
      "The requested role does not exist.",
    );
    expectError(h, await set("nobody", []), 404, NOT_FOUND);
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE slug = ?", [slug]);
    expect(rows).toEqual([]);
  });

  it("a deleted role -> 404", async () => {
    const rk = await admin(h);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "gone" }, rk));
    expectOk(await h.post("/v2/permissions.deleteRole", { role: roleId }, rk));
    expectError(h, await set(roleId, ["a.b"]), 404, NOT_FOUND);
    expectError(h, await set("gone", []), 404, NOT_FOUND);
  });

  // The collation would find `padded` for `padded `; the lookup compares exactly.
  it("a name with a trailing space does not reach the role without it", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "padded", permissions: ["pad.read"] }, await admin(h)));
    expectError(h, await set("padded ", []), 404, NOT_FOUND);
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: "padded" }, await admin(h))).permissions).toHaveLength(1);
  });

  // Another workspace's role is reported exactly like a missing one, and keeps its permissions.
  it("another workspace's role, by id or by name -> 404, and it is unchanged", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "mine", permissions: ["mine.read"] }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await set(roleId, [], other), 404, NOT_FOUND);
    expectError(h, await set("mine", ["theirs.read"], other), 404, NOT_FOUND);
    const role = expectOk(await h.post("/v2/permissions.getRole", { role: roleId }, await admin(h)));
    expect(role.permissions.map((p: { slug: string }) => p.slug)).toEqual(["mine.read"]);
  });
});
