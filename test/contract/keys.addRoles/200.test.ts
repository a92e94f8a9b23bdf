// keys.addRoles: roles are matched by name; `data` is every
// role of the key after the call, each as a Role with its permissions; roles
// already attached are ignored. Roles are seeded in SQL (seedRole).
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.addRoles";
const namesOf = (data: Json[]): string[] => data.map((r) => r.name as string).sort();

describe("keys.addRoles 200", () => {
  const h = useHarness();

  it("attaches roles: data is Role[] with id, name, description and permissions", async () => {
    const [reader, empty] = [uid("reader"), uid("empty")];
    const [p1, p2] = [uid("docs.read"), uid("docs.list")];
    const readerId = await seedRole(h, reader, [p1, p2]);
    const emptyId = await seedRole(h, empty);
    await h.db.pool.execute("UPDATE roles SET description = ? WHERE id = ?", ["Reads documents", readerId]);
    const { keyId } = await createKey(h, await createApi(h));

    const data = expectOk(await h.post(PATH, { keyId, roles: [reader, empty] }, await admin(h))) as Json[];
    expect(namesOf(data)).toEqual([reader, empty].sort());
    const r = data.find((x) => x.name === reader);
    expect(r).toEqual({
      id: readerId,
      name: reader,
      description: "Reads documents",
      permissions: expect.any(Array),
    });
    expect((r.permissions as Json[]).map((p) => p.slug).sort()).toEqual([p1, p2].sort());
    for (const p of r.permissions as Json[]) expect(p).toMatchObject({ id: expect.stringMatching(/^perm_/), name: p.slug });
    // A role without permissions omits the field, as every empty list is left out.
    expect(data.find((x) => x.name === empty)).toEqual({ id: emptyId, name: empty });
    expect([...expectOk(await getKey(h, keyId)).roles].sort()).toEqual([reader, empty].sort());
  });

  it("returns all roles of the key after the add, those attached before included", async () => {
    const [before, added] = [uid("before"), uid("added")];
    await seedRole(h, before);
    await seedRole(h, added);
    const { keyId } = await createKey(h, await createApi(h), { roles: [before] });
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [added] }, await admin(h))))).toEqual([before, added].sort());
  });

  it("is idempotent: roles already attached, or repeated, are ignored", async () => {
    const rk = await admin(h);
    const role = uid("dup");
    await seedRole(h, role, [uid("x.read")]);
    const { keyId } = await createKey(h, await createApi(h), { roles: [role] });
    const once = expectOk(await h.post(PATH, { keyId, roles: [role, role] }, rk));
    const twice = expectOk(await h.post(PATH, { keyId, roles: [role] }, rk));
    expect(namesOf(once)).toEqual([role]);
    expect(twice).toEqual(once);
    const [links] = await h.db.pool.query("SELECT COUNT(*) AS n FROM keys_roles WHERE key_id = ?", [keyId]);
    expect(Number((links as Array<{ n: number }>)[0]?.n)).toBe(1);
  });

  it("role names have no pattern: spaces and other characters, up to 128 characters", async () => {
    const spaced = `Support Team ${uid("x")}`;
    const long = `r${"o".repeat(127)}`;
    await seedRole(h, spaced);
    await seedRole(h, long);
    const { keyId } = await createKey(h, await createApi(h));
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [spaced, long] }, await admin(h))))).toEqual([spaced, long].sort());
  });

  it("accepts 100 roles", async () => {
    const names = Array.from({ length: 100 }, (_, i) => `bulk_${uid("r")}_${i}`);
    for (const n of names) await seedRole(h, n);
    const { keyId } = await createKey(h, await createApi(h));
    expect(expectOk(await h.post(PATH, { keyId, roles: names }, await admin(h)))).toHaveLength(100);
  });

  it("the very next verification sees the role's permissions", async () => {
    const role = uid("docs_admin");
    await seedRole(h, role, ["documents.*"]);
    const { keyId, key } = await createKey(h, await createApi(h));
    expect(await verifyKey(h, key, { permissions: "documents.delete" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expectOk(await h.post(PATH, { keyId, roles: [role] }, await admin(h)));
    const data = await verifyKey(h, key, { permissions: "documents.delete" });
    expect(data).toMatchObject({ valid: true, code: "VALID", roles: [role] });
  });

  it("per-API update_key and rbac.*.add_role_to_key are enough", async () => {
    const apiId = await createApi(h);
    const role = uid("scoped");
    await seedRole(h, role);
    const { keyId } = await createKey(h, apiId);
    const rk = await h.rootKey([`apis.${apiId}.update_key`, "rbac.*.add_role_to_key"]);
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [role] }, rk)))).toEqual([role]);
  });
});
