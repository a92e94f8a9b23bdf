import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, uid, verifyKey } from "../shared/helpers.js";

describe("permissions.createRole 200", () => {
  const h = useHarness();

  const getRole = async (role: string) => expectOk(await h.post("/v2/permissions.getRole", { role }, await admin(h)));
  const getPermission = async (permission: string) => expectOk(await h.post("/v2/permissions.getPermission", { permission }, await admin(h)));

  it("answers data {roleId} (role_…); a role without permissions needs only rbac.*.create_role", async () => {
    const rk = await h.rootKey(["rbac.*.create_role"]);
    const data = expectOk(await h.post("/v2/permissions.createRole", { name: "viewer", description: "Reads things" }, rk));
    expect(Object.keys(data)).toEqual(["roleId"]);
    expect(data.roleId).toMatch(/^role_[1-9A-HJ-NP-Za-km-z]+$/);
    // `permissions` is left out when empty, as every empty list is.
    expect(await getRole(data.roleId)).toEqual({ id: data.roleId, name: "viewer", description: "Reads things" });
  });

  it("an empty permissions list and an empty description are left out", async () => {
    const rk = await h.rootKey(["rbac.*.create_role"]);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "bare", description: "", permissions: [] }, rk));
    expect(await getRole(roleId)).toEqual({ id: roleId, name: "bare" });
  });

  it("attaches existing permissions with rbac.*.create_role and rbac.*.add_permission_to_role", async () => {
    const { permissionId } = expectOk(
      await h.post("/v2/permissions.createPermission", { name: "Read docs", slug: "docs.read", description: "Read" }, await admin(h)),
    );
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.add_permission_to_role"]);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "reader", permissions: ["docs.read"] }, rk));
    expect(await getRole(roleId)).toEqual({
      id: roleId,
      name: "reader",
      permissions: [{ id: permissionId, name: "Read docs", slug: "docs.read", description: "Read" }],
    });
  });

  it("creates missing slugs (name = slug) when it also holds rbac.*.create_permission", async () => {
    const rk = await h.rootKey(["rbac.*.create_role", "rbac.*.add_permission_to_role", "rbac.*.create_permission"]);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "writer", permissions: ["new.write", "new.delete"] }, rk));
    const role = await getRole(roleId);
    // A role's permissions are listed by slug.
    expect(role.permissions.map((p: { slug: string }) => p.slug)).toEqual(["new.delete", "new.write"]);
    expect(await getPermission("new.write")).toMatchObject({ id: expect.stringMatching(/^perm_/), name: "new.write", slug: "new.write" });
  });

  it("repeated slugs are attached once; slugs that differ in case are two permissions", async () => {
    const { roleId } = expectOk(
      await h.post("/v2/permissions.createRole", { name: "dupes", permissions: ["x.read", "x.read", "x.Read", "x.read"] }, await admin(h)),
    );
    expect((await getRole(roleId)).permissions.map((p: { slug: string }) => p.slug)).toEqual(["x.Read", "x.read"]);
  });

  it("accepts the bounds: a 128-character name with spaces and any characters, a 512-character description", async () => {
    const name = `Ops team: on-call / “night” 🌙 ${"n".repeat(98)}`;
    expect([...name]).toHaveLength(128);
    const description = "d".repeat(512);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name, description }, await admin(h)));
    expect(await getRole(name)).toEqual({ id: roleId, name, description });
  });

  it("role names are case-sensitive, and a leading space is kept", async () => {
    const rk = await admin(h);
    const a = expectOk(await h.post("/v2/permissions.createRole", { name: "Admin" }, rk)).roleId;
    const b = expectOk(await h.post("/v2/permissions.createRole", { name: "admin" }, rk)).roleId;
    const c = expectOk(await h.post("/v2/permissions.createRole", { name: " admin" }, rk)).roleId;
    expect(new Set([a, b, c]).size).toBe(3);
    expect((await getRole(" admin")).id).toBe(c);
  });

  it.each([["rbac.*"], ["*"]])("the grant %s covers every grant createRole can need", async (grant) => {
    expectOk(await h.post("/v2/permissions.createRole", { name: uid("glob"), permissions: [uid("glob.perm")] }, await h.rootKey([grant])));
  });

  it("keys.createKey can give the role to a key, which then holds its permissions", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "support", permissions: ["tickets.read", "tickets.*"] }, await admin(h)));
    const { keyId, key } = await createKey(h, await createApi(h), { roles: ["support"] });
    expect(expectOk(await getKey(h, keyId))).toMatchObject({ roles: ["support"], permissions: ["tickets.*", "tickets.read"] });
    expect(await verifyKey(h, key, { permissions: "tickets.close" })).toMatchObject({ valid: true, code: "VALID", roles: ["support"] });
  });

  // Concurrent multi-row inserts of the same new slugs, in different orders, are
  // where InnoDB picks deadlock victims: none of that may reach the caller.
  it("concurrent roles sharing new slugs (in any order) all succeed, and each slug exists once", async () => {
    const rk = await admin(h);
    const shuffle = <T>(a: T[]): T[] =>
      a
        .map((x) => [Math.random(), x] as const)
        .sort((p, q) => p[0] - q[0])
        .map((p) => p[1]);
    for (let round = 0; round < 4; round++) {
      const slugs = Array.from({ length: 40 }, (_, i) => `shared${round}.p${i}`);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => h.post("/v2/permissions.createRole", { name: `team_${round}_${i}`, permissions: shuffle(slugs) }, rk)),
      );
      for (const r of results) expectOk(r);
      for (const r of results) expect((await getRole(r.body.data.roleId)).permissions).toHaveLength(40);
      const list = expectOk(await h.post("/v2/permissions.listPermissions", { search: `shared${round}.` }, rk), { pagination: true });
      expect(list.map((p: { slug: string }) => p.slug).sort()).toEqual([...slugs].sort());
    }
  });

  it("1000 slugs are accepted", async () => {
    const permissions = Array.from({ length: 1000 }, (_, i) => `bulk.p${i}`);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "bulk", permissions }, await admin(h)));
    expect((await getRole(roleId)).permissions).toHaveLength(1000);
  });
});
