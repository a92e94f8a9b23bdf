// keys.setRoles: the key's roles become exactly the requested
// set (`[]` removes all); `data` is the final set, each role with its permissions.
// Direct permissions are not touched.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.setRoles";
const namesOf = (data: Json[]): string[] => data.map((r) => r.name as string).sort();

describe("keys.setRoles 200", () => {
  const h = useHarness();

  it("replaces the roles: extras removed, missing added; data is the final Role[]", async () => {
    const [keep, drop, add] = [uid("keep"), uid("drop"), uid("add")];
    const slug = uid("add.read");
    await seedRole(h, keep);
    await seedRole(h, drop);
    const addId = await seedRole(h, add, [slug]);
    const { keyId } = await createKey(h, await createApi(h), { roles: [keep, drop] });
    const data = expectOk(await h.post(PATH, { keyId, roles: [keep, add] }, await admin(h))) as Json[];
    expect(namesOf(data)).toEqual([keep, add].sort());
    expect(data.find((r) => r.name === add)).toEqual({ id: addId, name: add, permissions: [{ id: expect.stringMatching(/^perm_/), name: slug, slug }] });
    expect([...expectOk(await getKey(h, keyId)).roles].sort()).toEqual([keep, add].sort());
  });

  it("[] removes every role: data is []; direct permissions stay", async () => {
    const role = uid("gone");
    await seedRole(h, role, [uid("role.read")]);
    const direct = uid("direct.read");
    const { keyId } = await createKey(h, await createApi(h), { roles: [role], permissions: [direct] });
    expect(expectOk(await h.post(PATH, { keyId, roles: [] }, await admin(h)))).toEqual([]);
    const got = expectOk(await getKey(h, keyId));
    expect(got.roles).toBeUndefined();
    expect(got.permissions).toEqual([direct]);
  });

  it("is idempotent, and repeated names count once", async () => {
    const rk = await admin(h);
    const [a, b] = [uid("a"), uid("b")];
    await seedRole(h, a);
    await seedRole(h, b);
    const { keyId } = await createKey(h, await createApi(h));
    const first = expectOk(await h.post(PATH, { keyId, roles: [a, b, a] }, rk));
    const second = expectOk(await h.post(PATH, { keyId, roles: [b, a] }, rk));
    expect(namesOf(first)).toEqual([a, b].sort());
    expect(second).toEqual(first);
  });

  it("accepts 100 roles", async () => {
    const names = Array.from({ length: 100 }, (_, i) => `bulk_${uid("r")}_${i}`);
    for (const n of names) await seedRole(h, n);
    const { keyId } = await createKey(h, await createApi(h));
    expect(expectOk(await h.post(PATH, { keyId, roles: names }, await admin(h)))).toHaveLength(100);
  });

  it("the very next verification sees the new set of roles", async () => {
    const [docs, billing] = [uid("docs"), uid("billing")];
    await seedRole(h, docs, ["documents.*"]);
    await seedRole(h, billing, ["billing.read"]);
    const { keyId, key } = await createKey(h, await createApi(h), { roles: [docs] });
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ code: "VALID" });
    expectOk(await h.post(PATH, { keyId, roles: [billing] }, await admin(h)));
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "billing.read" })).toMatchObject({ valid: true, code: "VALID", roles: [billing] });
  });

  it("per-API update_key with add_role_to_key and remove_role_from_key is enough", async () => {
    const apiId = await createApi(h);
    const role = uid("scoped");
    await seedRole(h, role);
    const { keyId } = await createKey(h, apiId);
    const rk = await h.rootKey([`apis.${apiId}.update_key`, "rbac.*.add_role_to_key", "rbac.*.remove_role_from_key"]);
    expect(namesOf(expectOk(await h.post(PATH, { keyId, roles: [role] }, rk)))).toEqual([role]);
    expect(expectOk(await h.post(PATH, { keyId, roles: [] }, rk))).toEqual([]);
  });
});
