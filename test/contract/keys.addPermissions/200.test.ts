// keys.addPermissions: `data` is every direct permission of the
// key after the call, as Permission objects; missing slugs are created, slugs
// already attached are ignored.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.addPermissions";
const slugsOf = (data: Json[]): string[] => data.map((p) => p.slug as string).sort();

describe("keys.addPermissions 200", () => {
  const h = useHarness();

  async function permissionRows(slugs: string[]): Promise<Array<{ id: string; name: string; slug: string }>> {
    const [rows] = await h.db.pool.query("SELECT id, name, slug FROM permissions WHERE workspace_id = ? AND slug IN (?) ORDER BY slug", [h.workspaceId, slugs]);
    return rows as Array<{ id: string; name: string; slug: string }>;
  }

  it("adds permissions to a key without any: data is the Permission[] (id, name, slug)", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const a = uid("documents.read");
    const b = uid("documents.write");
    const data = expectOk(await h.post(PATH, { keyId, permissions: [a, b] }, await admin(h)));
    expect(Array.isArray(data)).toBe(true);
    expect(slugsOf(data)).toEqual([a, b].sort());
    for (const p of data as Json[]) {
      expect(p.id).toMatch(/^perm_/);
      expect(p.name).toBe(p.slug);
      expect(Object.keys(p).every((k) => ["id", "name", "slug", "description"].includes(k))).toBe(true);
      if (p.description !== undefined) expect(p.description).toBeTypeOf("string");
    }
  });

  it("creates missing slugs in the workspace (name = slug) and reuses existing ones", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const existing = uid("billing.read");
    const fresh = uid("billing.write");
    const first = await createKey(h, apiId, { permissions: [existing] });
    const [before] = await permissionRows([existing]);
    expect(await permissionRows([fresh])).toEqual([]);

    const { keyId } = await createKey(h, apiId);
    const data = expectOk(await h.post(PATH, { keyId, permissions: [existing, fresh] }, rk)) as Json[];
    const rows = await permissionRows([existing, fresh]);
    expect(rows.map((r) => r.slug)).toEqual([existing, fresh].sort());
    expect(rows.find((r) => r.slug === fresh)?.name).toBe(fresh);
    // The existing permission is reused, not duplicated.
    expect(data.find((p) => p.slug === existing)?.id).toBe(before?.id);
    expect(data.find((p) => p.slug === fresh)?.id).toBe(rows.find((r) => r.slug === fresh)?.id);
    // The other key is untouched.
    expect(expectOk(await getKey(h, first.keyId)).permissions).toEqual([existing]);
  });

  it("returns all direct permissions after the call, those attached before included", async () => {
    const apiId = await createApi(h);
    const old = uid("old.perm");
    const added = uid("new.perm");
    const { keyId } = await createKey(h, apiId, { permissions: [old] });
    const data = expectOk(await h.post(PATH, { keyId, permissions: [added] }, await admin(h)));
    expect(slugsOf(data)).toEqual([old, added].sort());
    expect([...expectOk(await getKey(h, keyId)).permissions].sort()).toEqual([old, added].sort());
  });

  it("is idempotent: slugs already attached, or repeated in the request, are ignored", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const a = uid("x.read");
    const { keyId } = await createKey(h, apiId, { permissions: [a] });
    const once = expectOk(await h.post(PATH, { keyId, permissions: [a, a, a] }, rk));
    const twice = expectOk(await h.post(PATH, { keyId, permissions: [a] }, rk));
    expect(once).toEqual(twice);
    expect(slugsOf(once)).toEqual([a]);
    const [links] = await h.db.pool.query("SELECT COUNT(*) AS n FROM keys_permissions WHERE key_id = ?", [keyId]);
    expect(Number((links as Array<{ n: number }>)[0]?.n)).toBe(1);
  });

  it("lists direct permissions only: those inherited from a role are not in data", async () => {
    const apiId = await createApi(h);
    const role = uid("reader");
    const viaRole = uid("role.perm");
    await seedRole(h, role, [viaRole]);
    const { keyId } = await createKey(h, apiId, { roles: [role] });
    const direct = uid("direct.perm");
    const data = expectOk(await h.post(PATH, { keyId, permissions: [direct] }, await admin(h)));
    expect(slugsOf(data)).toEqual([direct]);
  });

  it("accepts the widest slugs: 128 characters, every pattern character, wildcards, 1000 items", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const long = `p${"a".repeat(127)}`;
    const odd = `A-z_0.9:${uid("x")}.*`;
    const many = Array.from({ length: 998 }, (_, i) => `bulk.${i}`);
    const data = expectOk(await h.post(PATH, { keyId, permissions: [long, odd, ...many] }, rk)) as Json[];
    expect(data).toHaveLength(1000);
    expect(data.map((p) => p.slug)).toEqual(expect.arrayContaining([long, odd, "bulk.0", "bulk.997"]));
  });

  it("concurrent calls with overlapping new slugs all succeed; each slug is created once", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const keys = await Promise.all([createKey(h, apiId), createKey(h, apiId)]);
    const base = uid("race");
    const slugs = Array.from({ length: 6 }, (_, i) => `${base}.${i}`);
    const calls = Array.from({ length: 12 }, (_, i) => {
      const keyId = (keys[i % 2] as { keyId: string }).keyId;
      // Each call sends the slugs in a different order.
      const mine = i % 3 === 0 ? [...slugs].reverse() : slugs.slice(i % slugs.length).concat(slugs.slice(0, i % slugs.length));
      return h.post(PATH, { keyId, permissions: mine }, rk);
    });
    for (const res of await Promise.all(calls)) expect(slugsOf(expectOk(res))).toEqual([...slugs].sort());
    expect((await permissionRows(slugs)).map((r) => r.slug)).toEqual([...slugs].sort());
    for (const k of keys) expect([...expectOk(await getKey(h, k.keyId)).permissions].sort()).toEqual([...slugs].sort());
  });

  it("the very next verification sees the new permission, wildcards included", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expectOk(await h.post(PATH, { keyId, permissions: ["documents.*"] }, rk));
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: true, code: "VALID" });
  });

  it.each<[string, (apiId: string) => string[]]>([
    ["per-API update_key and add_permission_to_key, for existing slugs", (apiId) => [`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key"]],
    ["apis.*.update_key and the rbac wildcard", () => ["apis.*.update_key", "rbac.*"]],
  ])("a root key with %s is enough", async (_label, perms) => {
    const apiId = await createApi(h);
    const slug = uid("seeded.perm");
    await createKey(h, apiId, { permissions: [slug] }); // the slug now exists
    const { keyId } = await createKey(h, apiId);
    const data = expectOk(await h.post(PATH, { keyId, permissions: [slug] }, await h.rootKey(perms(apiId))));
    expect(slugsOf(data)).toEqual([slug]);
  });

  it("a new slug with per-API update_key, add_permission_to_key and create_permission", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const slug = uid("brand.new");
    const rk = await h.rootKey([`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key", "rbac.*.create_permission"]);
    expect(slugsOf(expectOk(await h.post(PATH, { keyId, permissions: [slug] }, rk)))).toEqual([slug]);
  });
});
