import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk } from "../shared/helpers.js";

describe("permissions.getPermission 200", () => {
  const h = useHarness();

  const create = async (body: Record<string, unknown>) =>
    expectOk(await h.post("/v2/permissions.createPermission", body, await admin(h))).permissionId as string;

  it("reads a permission by id and by slug, as data (the Permission itself)", async () => {
    const id = await create({ name: "Write documents", slug: "documents.write", description: "Edit any document" });
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    const expected = { id, name: "Write documents", slug: "documents.write", description: "Edit any document" };
    expect(expectOk(await h.post("/v2/permissions.getPermission", { permission: id }, rk))).toEqual(expected);
    expect(expectOk(await h.post("/v2/permissions.getPermission", { permission: "documents.write" }, rk))).toEqual(expected);
  });

  it("an id wins over a slug that spells the same text", async () => {
    const first = await create({ name: "first", slug: "first.perm" });
    // A second permission whose slug is the first one's id.
    await create({ name: "impostor", slug: first });
    const got = expectOk(await h.post("/v2/permissions.getPermission", { permission: first }, await admin(h)));
    expect(got).toEqual({ id: first, name: "first", slug: "first.perm" });
  });

  it("reads an auto-created permission (name = slug)", async () => {
    await createKey(h, await createApi(h), { permissions: ["auto.read"] });
    const got = expectOk(await h.post("/v2/permissions.getPermission", { permission: "auto.read" }, await admin(h)));
    expect(got).toMatchObject({ id: expect.stringMatching(/^perm_/), name: "auto.read", slug: "auto.read" });
  });

  it.each([["rbac.*"], ["*"], ["rbac.*.read_*"]])("the grant %s covers rbac.*.read_permission", async (grant) => {
    await create({ name: "g", slug: `glob.${grant.length}` });
    expectOk(await h.post("/v2/permissions.getPermission", { permission: `glob.${grant.length}` }, await h.rootKey([grant])));
  });
});
