import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:permission_not_found";

describe("permissions.deletePermission 404", () => {
  const h = useHarness();
  const del = async (permission: string, rk?: string) => h.post("/v2/permissions.deletePermission", { permission }, rk ?? (await admin(h)));

  it("an unknown id or slug -> 404 permission_not_found", async () => {
    expectError(h, await del("perm_doesnotexist"), 404, NOT_FOUND, "The requested permission does not exist.");
    expectError(h, await del("no.such.slug"), 404, NOT_FOUND);
  });

  it("a second delete -> 404", async () => {
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "twice.perm" }, await admin(h)));
    expectOk(await del(permissionId));
    expectError(h, await del(permissionId), 404, NOT_FOUND);
    expectError(h, await del("twice.perm"), 404, NOT_FOUND);
  });

  // Another workspace's permission is reported exactly like a missing one, and stays.
  it("another workspace's permission -> 404, and it is not deleted", async () => {
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "mine.perm" }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await del(permissionId, other), 404, NOT_FOUND);
    expectError(h, await del("mine.perm", other), 404, NOT_FOUND);
    expectOk(await h.post("/v2/permissions.getPermission", { permission: permissionId }, await admin(h)));
  });
});
