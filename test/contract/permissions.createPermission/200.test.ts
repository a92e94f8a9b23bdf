import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, foreignAdmin, uid } from "../shared/helpers.js";

describe("permissions.createPermission 200", () => {
  const h = useHarness();

  const get = async (permission: string) => expectOk(await h.post("/v2/permissions.getPermission", { permission }, await admin(h)));

  it("answers data {permissionId} (perm_…), and the permission reads back as sent", async () => {
    const rk = await h.rootKey(["rbac.*.create_permission"]);
    const data = expectOk(
      await h.post("/v2/permissions.createPermission", { name: "Read documents", slug: "documents.read", description: "Lets a key read documents" }, rk),
    );
    expect(Object.keys(data)).toEqual(["permissionId"]);
    expect(data.permissionId).toMatch(/^perm_[1-9A-HJ-NP-Za-km-z]+$/);
    expect(await get(data.permissionId)).toEqual({
      id: data.permissionId,
      name: "Read documents",
      slug: "documents.read",
      description: "Lets a key read documents",
    });
  });

  it("leaves description out when it was not sent, or sent empty", async () => {
    const rk = await admin(h);
    const a = expectOk(await h.post("/v2/permissions.createPermission", { name: "No description", slug: "nodesc.a" }, rk));
    expect(await get(a.permissionId)).toEqual({ id: a.permissionId, name: "No description", slug: "nodesc.a" });
    const b = expectOk(await h.post("/v2/permissions.createPermission", { name: "Empty description", slug: "nodesc.b", description: "" }, rk));
    expect(await get(b.permissionId)).toEqual({ id: b.permissionId, name: "Empty description", slug: "nodesc.b" });
  });

  it("accepts the bounds: a 128-character slug of every allowed character, a 512-character name and description", async () => {
    const slug = `aZ09_:-.*${"x".repeat(119)}`;
    expect(slug).toHaveLength(128);
    const body = { name: "n".repeat(512), slug, description: "d".repeat(512) };
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", body, await admin(h)));
    expect(await get(permissionId)).toEqual({ id: permissionId, ...body });
  });

  it("counts lengths in characters: 512 emoji are a valid name", async () => {
    const name = "🔑".repeat(512);
    const { permissionId } = expectOk(await h.post("/v2/permissions.createPermission", { name, slug: "emoji.name" }, await admin(h)));
    expect((await get(permissionId)).name).toBe(name);
  });

  it("names are not unique; slugs are case-sensitive", async () => {
    const rk = await admin(h);
    const a = expectOk(await h.post("/v2/permissions.createPermission", { name: "Same", slug: "case.read" }, rk));
    const b = expectOk(await h.post("/v2/permissions.createPermission", { name: "Same", slug: "case.Read" }, rk));
    expect(a.permissionId).not.toBe(b.permissionId);
    expect((await get("case.Read")).id).toBe(b.permissionId);
    expect((await get("case.read")).id).toBe(a.permissionId);
  });

  // A granted `*` is a glob (docs/permissions.md, "Wildcards"), so broader grants cover rbac.*.create_permission.
  it.each([["rbac.*"], ["*"], ["rbac.*.create_*"]])("the grant %s covers rbac.*.create_permission", async (grant) => {
    const rk = await h.rootKey([grant]);
    expectOk(await h.post("/v2/permissions.createPermission", { name: "g", slug: uid("glob") }, rk));
  });

  it("a slug taken in another workspace is free in this one", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "shared.slug" }, await foreignAdmin(h)));
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "shared.slug" }, await admin(h)));
  });

  it("the new permission can be granted to a key and is checked at verification", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "Billing", slug: "billing.write" }, await admin(h)));
    const { key } = await createKey(h, await createApi(h), { permissions: ["billing.write"] });
    const res = await h.post("/v2/keys.verifyKey", { key, permissions: "billing.write" }, await admin(h));
    expect(expectOk(res)).toMatchObject({ valid: true, code: "VALID", permissions: ["billing.write"] });
  });
});
