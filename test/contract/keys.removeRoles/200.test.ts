// keys.removeRoles: `data` is the roles that remain, each with
// its permissions; a known role that is not attached is ignored. The roles
// themselves, and direct permissions, are not touched.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.removeRoles";
const namesOf = (data: Json[]): string[] => data.map((r) => r.name as string).sort();

describe("keys.removeRoles 200", () => {
  const h = useHarness();

  it("removes the named roles: data is the remaining Role[] with permissions", async () => {
    const [a, b, c] = [uid("a"), uid("b"), uid("c")];
    const slug = uid("b.read");
    await seedRole(h, a);
    const bId = await seedRole(h, b, [slug]);
    await seedRole(h, c);
    const { keyId } = await createKey(h, await createApi(h), { roles: [a, b, c] });
    const data = expectOk(await h.post(PATH, { keyId, roles: [a, c] }, await admin(h))) as Json[];
    expect(data).toEqual([{ id: bId, name: b, permissions: [{ id: expect.stringMatching(/^perm_/), name: slug, slug }] }]);
    expect(expectOk(await getKey(h, keyId)).roles).toEqual([b]);
  });

  it("removing every role gives data: []", async () => {
    const role = uid("only");
    await seedRole(h, role, [uid("x.read")]);
    const { keyId } = await createKey(h, await createApi(h), { roles: [role] });
    expect(expectOk(await h.post(PATH, { keyId, roles: [role] }, await admin(h)))).toEqual([]);
    expect(expectOk(await getKey(h, keyId)).roles).toBeUndefined();
  });

  it("a known role that is not attached is ignored; removing again is idempotent", async () => {
    const rk = await admin(h);
    const [kept, gone, unattached] = [uid("kept"), uid("gone"), uid("unattached")];
    for (const r of [kept, gone, unattached]) await seedRole(h, r);
    const { keyId } = await createKey(h, await createApi(h), { roles: [kept, gone] });
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [unattached] }, rk)))).toEqual([kept, gone].sort());
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [gone, unattached, gone] }, rk)))).toEqual([kept]);
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [gone] }, rk)))).toEqual([kept]);
  });

  it("the role stays in the workspace and on other keys; direct permissions stay", async () => {
    const apiId = await createApi(h);
    const role = uid("shared");
    const direct = uid("direct.read");
    await seedRole(h, role);
    const one = await createKey(h, apiId, { roles: [role], permissions: [direct] });
    const two = await createKey(h, apiId, { roles: [role] });
    expectOk(await h.post(PATH, { keyId: one.keyId, roles: [role] }, await admin(h)));
    expect(expectOk(await getKey(h, one.keyId)).permissions).toEqual([direct]);
    expect(expectOk(await getKey(h, two.keyId)).roles).toEqual([role]);
    const [rows] = await h.db.pool.query("SELECT id FROM roles WHERE workspace_id = ? AND name = ?", [h.workspaceId, role]);
    expect(rows).toHaveLength(1);
  });

  it("the very next verification loses the role's permissions", async () => {
    const role = uid("docs_admin");
    await seedRole(h, role, ["documents.*"]);
    const { keyId, key } = await createKey(h, await createApi(h), { roles: [role] });
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: true, code: "VALID" });
    expectOk(await h.post(PATH, { keyId, roles: [role] }, await admin(h)));
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
  });

  it("per-API update_key and rbac.*.remove_role_from_key are enough", async () => {
    const apiId = await createApi(h);
    const role = uid("scoped");
    await seedRole(h, role);
    const { keyId } = await createKey(h, apiId, { roles: [role] });
    const rk = await h.rootKey([`apis.${apiId}.update_key`, "rbac.*.remove_role_from_key"]);
    expect(expectOk(await h.post(PATH, { keyId, roles: [role] }, rk))).toEqual([]);
  });
});
