import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, seedRole } from "../shared/helpers.js";

describe("permissions.getRole 200", () => {
  const h = useHarness();

  it("reads a role by id and by name, as data (the Role with its permissions, by slug)", async () => {
    const rk = await admin(h);
    const { permissionId } = expectOk(
      await h.post("/v2/permissions.createPermission", { name: "Write", slug: "docs.write", description: "Edit documents" }, rk),
    );
    const { roleId } = expectOk(
      await h.post("/v2/permissions.createRole", { name: "editor", description: "Edits", permissions: ["docs.write", "docs.read"] }, rk),
    );
    const reader = await h.rootKey(["rbac.*.read_role"]);
    const expected = {
      id: roleId,
      name: "editor",
      description: "Edits",
      permissions: [
        { id: expect.stringMatching(/^perm_/), name: "docs.read", slug: "docs.read", description: "Auto-created permission: docs.read" },
        { id: permissionId, name: "Write", slug: "docs.write", description: "Edit documents" },
      ],
    };
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: roleId }, reader))).toEqual(expected);
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: "editor" }, reader))).toEqual(expected);
  });

  it("a role without permissions has no permissions field", async () => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "empty" }, await admin(h)));
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: "empty" }, await admin(h)))).toEqual({ id: roleId, name: "empty" });
  });

  it("an id wins over a name that spells the same text", async () => {
    const rk = await admin(h);
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name: "original" }, rk));
    expectOk(await h.post("/v2/permissions.createRole", { name: roleId }, rk));
    expect(expectOk(await h.post("/v2/permissions.getRole", { role: roleId }, rk))).toEqual({ id: roleId, name: "original" });
  });

  it("reads a role created outside the API (seeded rows)", async () => {
    const roleId = await seedRole(h, "seeded", ["seeded.read"]);
    const got = expectOk(await h.post("/v2/permissions.getRole", { role: "seeded" }, await admin(h)));
    expect(got).toMatchObject({ id: roleId, name: "seeded", permissions: [{ slug: "seeded.read", name: "seeded.read" }] });
  });

  it.each([["rbac.*"], ["*"], ["rbac.*.read_*"]])("the grant %s covers rbac.*.read_role", async (grant) => {
    expectOk(await h.post("/v2/permissions.getRole", { role: "empty" }, await h.rootKey([grant])));
  });
});
