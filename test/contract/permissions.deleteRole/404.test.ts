import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:role_not_found";

describe("permissions.deleteRole 404", () => {
  const h = useHarness();
  const del = async (role: string, rk?: string) => h.post("/v2/permissions.deleteRole", { role }, rk ?? (await admin(h)));

  it("an unknown id or name -> 404 role_not_found", async () => {
    expectError(h, await del("role_doesnotexist"), 404, NOT_FOUND, "The requested role does not exist.");
    expectError(h, await del("nobody"), 404, NOT_FOUND);
  });

  it("a second delete -> 404", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "twice" }, await admin(h)));
    expectOk(await del(roleId));
    expectError(h, await del(roleId), 404, NOT_FOUND);
    expectError(h, await del("twice"), 404, NOT_FOUND);
  });

  // The collation would find `padded` for `padded `; the lookup compares exactly.
  it("a name with a trailing space does not delete the role without it", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "padded" }, await admin(h)));
    expectError(h, await del("padded "), 404, NOT_FOUND);
    expectOk(await h.post("/v2/permissions.getRole", { role: "padded" }, await admin(h)));
  });

  // Another workspace's role is reported exactly like a missing one, and stays.
  it("another workspace's role -> 404, and it is not deleted", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "mine" }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await del(roleId, other), 404, NOT_FOUND);
    expectError(h, await del("mine", other), 404, NOT_FOUND);
    expectOk(await h.post("/v2/permissions.getRole", { role: roleId }, await admin(h)));
  });
});
