// keys.setPermissions: the key's direct permissions become
// exactly the requested set (`[]` removes all); missing slugs are created; `data`
// is that set as Permission objects. Roles are not touched.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.setPermissions";
const slugsOf = (data: Json[]): string[] => data.map((p) => p.slug as string).sort();

describe("keys.setPermissions 200", () => {
  const h = useHarness();

  it("replaces the direct permissions: extras removed, missing added, kept ones keep their link", async () => {
    const [keep, drop, add] = [uid("keep.read"), uid("drop.read"), uid("add.read")];
    const { keyId } = await createKey(h, await createApi(h), { permissions: [keep, drop] });
    const data = expectOk(await h.post(PATH, { keyId, permissions: [keep, add] }, await admin(h))) as Json[];
    expect(slugsOf(data)).toEqual([keep, add].sort());
    for (const p of data) expect(p).toMatchObject({ id: expect.stringMatching(/^perm_/), name: p.slug });
    expect([...expectOk(await getKey(h, keyId)).permissions].sort()).toEqual([keep, add].sort());
    // The dropped permission still exists in the workspace.
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, drop]);
    expect(rows).toHaveLength(1);
  });

  it("[] removes every direct permission: data is []", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: [uid("a.read"), uid("b.read")] });
    expect(expectOk(await h.post(PATH, { keyId, permissions: [] }, await admin(h)))).toEqual([]);
    expect(expectOk(await getKey(h, keyId)).permissions).toBeUndefined();
  });

  it("[] on a key without permissions is fine too", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    expect(expectOk(await h.post(PATH, { keyId, permissions: [] }, await admin(h)))).toEqual([]);
  });

  it("is idempotent, and repeated slugs count once", async () => {
    const rk = await admin(h);
    const [a, b] = [uid("a.read"), uid("b.read")];
    const { keyId } = await createKey(h, await createApi(h));
    const first = expectOk(await h.post(PATH, { keyId, permissions: [a, b, a] }, rk));
    const second = expectOk(await h.post(PATH, { keyId, permissions: [b, a] }, rk));
    expect(slugsOf(first)).toEqual([a, b].sort());
    expect(second).toEqual(first);
    const [links] = await h.db.pool.query("SELECT COUNT(*) AS n FROM keys_permissions WHERE key_id = ?", [keyId]);
    expect(Number((links as Array<{ n: number }>)[0]?.n)).toBe(2);
  });

  it("creates missing slugs (name = slug) and reuses existing ones", async () => {
    const apiId = await createApi(h);
    const existing = uid("existing.read");
    await createKey(h, apiId, { permissions: [existing] });
    const [[before]] = (await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, existing])) as unknown as [
      Array<{ id: string }>,
    ];
    const fresh = uid("fresh.read");
    const { keyId } = await createKey(h, apiId);
    const data = expectOk(await h.post(PATH, { keyId, permissions: [existing, fresh] }, await admin(h))) as Json[];
    expect(data.find((p) => p.slug === existing)?.id).toBe(before?.id);
    expect(data.find((p) => p.slug === fresh)).toMatchObject({ name: fresh, slug: fresh });
  });

  it("roles and the permissions they bring are not touched", async () => {
    const role = uid("viewer");
    const viaRole = uid("role.read");
    await seedRole(h, role, [viaRole]);
    const { keyId, key } = await createKey(h, await createApi(h), { roles: [role], permissions: [uid("direct.read")] });
    expect(expectOk(await h.post(PATH, { keyId, permissions: [] }, await admin(h)))).toEqual([]);
    const got = expectOk(await getKey(h, keyId));
    expect(got.roles).toEqual([role]);
    expect(got.permissions).toEqual([viaRole]);
    expect(await verifyKey(h, key, { permissions: viaRole })).toMatchObject({ valid: true, code: "VALID" });
  });

  it("the very next verification sees the new set", async () => {
    const rk = await admin(h);
    const { keyId, key } = await createKey(h, await createApi(h), { permissions: ["billing.read"] });
    expect(await verifyKey(h, key, { permissions: "billing.read" })).toMatchObject({ code: "VALID" });
    expectOk(await h.post(PATH, { keyId, permissions: ["documents.*"] }, rk));
    expect(await verifyKey(h, key, { permissions: "billing.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "documents.a.b" })).toMatchObject({ valid: true, code: "VALID" });
  });

  it("accepts 1000 slugs of up to 128 characters", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    const slugs = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, "0")}.${"s".repeat(123)}`);
    const data = expectOk(await h.post(PATH, { keyId, permissions: slugs }, await admin(h))) as Json[];
    expect(data).toHaveLength(1000);
  });

  it.each<[string, (apiId: string) => string[], boolean]>([
    [
      "per-API update_key with add and remove (existing slugs)",
      (apiId) => [`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key"],
      false,
    ],
    [
      "update_key with add, remove and create_permission (a new slug)",
      () => ["apis.*.update_key", "rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key", "rbac.*.create_permission"],
      true,
    ],
  ])("a root key with %s is enough", async (_label, perms, newSlug) => {
    const apiId = await createApi(h);
    const existing = uid("existing.read");
    const { keyId } = await createKey(h, apiId, { permissions: [existing, uid("other.read")] });
    const wanted = newSlug ? [existing, uid("new.read")] : [existing];
    const data = expectOk(await h.post(PATH, { keyId, permissions: wanted }, await h.rootKey(perms(apiId))));
    expect(slugsOf(data)).toEqual([...wanted].sort());
  });
});
