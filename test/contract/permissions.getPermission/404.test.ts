import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:permission_not_found";

describe("permissions.getPermission 404", () => {
  const h = useHarness();
  const get = async (permission: string, rk?: string) => h.post("/v2/permissions.getPermission", { permission }, rk ?? (await admin(h)));

  it("an unknown id or slug -> 404 permission_not_found", async () => {
    expectError(h, await get("perm_doesnotexist"), 404, NOT_FOUND, "The requested permission does not exist.");
    expectError(h, await get("no.such.slug"), 404, NOT_FOUND);
  });

  it("slugs are case-sensitive: another case is not found", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "cased.read" }, await admin(h)));
    expectError(h, await get("Cased.Read"), 404, NOT_FOUND);
  });

  it("a deleted permission -> 404 by id and by slug", async () => {
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "gone.perm" }, await admin(h)));
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: permissionId }, await admin(h)));
    expectError(h, await get(permissionId), 404, NOT_FOUND);
    expectError(h, await get("gone.perm"), 404, NOT_FOUND);
  });

  // Another workspace's permission is reported exactly like a missing one.
  it("another workspace's permission -> 404 by id and by slug", async () => {
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "mine.perm" }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await get(permissionId, other), 404, NOT_FOUND);
    expectError(h, await get("mine.perm", other), 404, NOT_FOUND);
  });
});
