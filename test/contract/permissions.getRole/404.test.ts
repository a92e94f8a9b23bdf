import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:role_not_found";

describe("permissions.getRole 404", () => {
  const h = useHarness();
  const get = async (role: string, rk?: string) => h.post("/v2/permissions.getRole", { role }, rk ?? (await admin(h)));

  it("an unknown id or name -> 404 role_not_found", async () => {
    expectError(h, await get("role_doesnotexist"), 404, NOT_FOUND, "The requested role does not exist.");
    expectError(h, await get("nobody"), 404, NOT_FOUND);
  });

  // The database collation ignores trailing spaces and this lookup must not:
  // `admin ` is not the role `admin`, nor is `Admin`.
  it("a name that differs by case or by trailing spaces -> 404", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "admin" }, await admin(h)));
    expectError(h, await get("Admin"), 404, NOT_FOUND);
    expectError(h, await get("admin "), 404, NOT_FOUND);
    expectError(h, await get("admin   "), 404, NOT_FOUND);
    expectError(h, await get(`${roleId} `), 404, NOT_FOUND);
  });

  it("a deleted role -> 404 by id and by name", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "gone" }, await admin(h)));
    expectOk(await h.post("/v2/permissions.deleteRole", { role: roleId }, await admin(h)));
    expectError(h, await get(roleId), 404, NOT_FOUND);
    expectError(h, await get("gone"), 404, NOT_FOUND);
  });

  // Another workspace's role is reported exactly like a missing one.
  it("another workspace's role -> 404 by id and by name", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "mine" }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await get(roleId, other), 404, NOT_FOUND);
    expectError(h, await get("mine", other), 404, NOT_FOUND);
  });
});
