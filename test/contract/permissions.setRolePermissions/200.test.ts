// permissions.setRolePermissions: the role's permissions become exactly the
// requested set (`[]` removes all), in one transaction with one audit record;
// missing slugs are created (name = slug) when the root key may create
// permissions; `data` is the role's permissions after the call, by slug. Keys
// holding the role see the change on their very next verification.
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, type Json, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/permissions.setRolePermissions";
const ADD = "rbac.*.add_permission_to_role";
const REMOVE = "rbac.*.remove_permission_from_role";
const CREATE = "rbac.*.create_permission";

const slugsOf = (data: Json[]): string[] => data.map((p) => p.slug as string);

describe("permissions.setRolePermissions 200", () => {
  const h = useHarness();

  const createRole = async (permissions: string[] = [], name = uid("role")) => {
    const { roleId } = expectOk(await h.post("/v2/permissions.createRole", { name, permissions }, await admin(h)));
    return { roleId: roleId as string, name };
  };
  const getRole = async (role: string) => expectOk(await h.post("/v2/permissions.getRole", { role }, await admin(h)));
  const permissionId = async (slug: string): Promise<string> =>
    expectOk(await h.post("/v2/permissions.getPermission", { permission: slug }, await admin(h))).id as string;

  /** The audit records written for one request, oldest first. */
  async function recordsOf(requestId: string): Promise<Json[]> {
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT * FROM audit_logs WHERE request_id = ? ORDER BY pk", [requestId]);
    return rows.map((r) => ({ ...r, resources: JSON.parse(String(r.resources)) }));
  }

  it("replaces the permissions: extras removed, missing added; data is the new set as Permission objects, by slug", async () => {
    const [keep, drop, add] = [uid("keep.read"), uid("drop.read"), uid("add.read")];
    expectOk(await h.post("/v2/permissions.createPermission", { name: "Add it", slug: add, description: "Adds" }, await admin(h)));
    const { roleId } = await createRole([keep, drop]);
    const rk = await h.rootKey([ADD, REMOVE]);
    const data = expectOk(await h.post(PATH, { roleId, permissions: [keep, add] }, rk)) as Json[];
    expect(slugsOf(data)).toEqual([keep, add].sort());
    expect(data.find((p) => p.slug === add)).toEqual({ id: await permissionId(add), name: "Add it", slug: add, description: "Adds" });
    expect(data.find((p) => p.slug === keep)).toMatchObject({ id: await permissionId(keep), name: keep, slug: keep });
    expect((await getRole(roleId)).permissions).toEqual(data);
    // The dropped permission still exists in the workspace; it only left the role.
    await permissionId(drop);
  });

  it("[] removes every permission of the role: data is [], getRole lists none", async () => {
    const { roleId } = await createRole([uid("a.read"), uid("b.read")]);
    expect(expectOk(await h.post(PATH, { roleId, permissions: [] }, await h.rootKey([ADD, REMOVE])))).toEqual([]);
    expect((await getRole(roleId)).permissions).toBeUndefined();
    const [links] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM roles_permissions WHERE role_id = ?", [roleId]);
    expect(Number(links[0]?.n)).toBe(0);
  });

  it("[] on a role without permissions is fine too", async () => {
    const { roleId } = await createRole();
    expect(expectOk(await h.post(PATH, { roleId, permissions: [] }, await admin(h)))).toEqual([]);
  });

  it("takes the role by id or by name, names of any characters included", async () => {
    const name = `Ops team: on-call / “night” ${uid("n")}`;
    const { roleId } = await createRole([], name);
    const [a, b] = [uid("a.read"), uid("b.read")];
    expect(slugsOf(expectOk(await h.post(PATH, { roleId: name, permissions: [a] }, await admin(h))))).toEqual([a]);
    expect(slugsOf(expectOk(await h.post(PATH, { roleId, permissions: [b] }, await admin(h))))).toEqual([b]);
    expect(slugsOf((await getRole(name)).permissions)).toEqual([b]);
  });

  it("creates missing slugs (name = slug) with rbac.*.create_permission, and reuses existing ones", async () => {
    const existing = uid("existing.read");
    const { roleId } = await createRole([existing]);
    const before = await permissionId(existing);
    const fresh = uid("fresh.read");
    const rk = await h.rootKey([ADD, REMOVE, CREATE]);
    const data = expectOk(await h.post(PATH, { roleId, permissions: [existing, fresh] }, rk)) as Json[];
    expect(data.find((p) => p.slug === existing)?.id).toBe(before);
    expect(data.find((p) => p.slug === fresh)).toMatchObject({ id: expect.stringMatching(/^perm_/), name: fresh, slug: fresh });
    expect(await permissionId(fresh)).toBe(data.find((p) => p.slug === fresh)?.id);
  });

  it("is idempotent; repeated slugs count once; slugs that differ in case are two permissions", async () => {
    const rk = await admin(h);
    const [a, b] = [uid("x.read"), uid("y.read")];
    const { roleId } = await createRole();
    const first = expectOk(await h.post(PATH, { roleId, permissions: [a, b, a, a.toUpperCase()] }, rk)) as Json[];
    expect(slugsOf(first)).toEqual([a, a.toUpperCase(), b].sort());
    const again = await h.post(PATH, { roleId, permissions: [a.toUpperCase(), b, a] }, rk);
    expect(expectOk(again)).toEqual(first);
    // A call that changes nothing writes no record.
    expect(await recordsOf(again.body.meta.requestId)).toEqual([]);
  });

  it("other roles and the keys' direct permissions are not touched", async () => {
    const shared = uid("shared.read");
    const other = await createRole([shared]);
    const { roleId } = await createRole([shared]);
    const { keyId } = await createKey(h, await createApi(h), { permissions: [shared] });
    expectOk(await h.post(PATH, { roleId, permissions: [] }, await admin(h)));
    expect(slugsOf((await getRole(other.roleId)).permissions)).toEqual([shared]);
    const key = expectOk(await h.post("/v2/keys.getKey", { keyId }, await admin(h)));
    expect(key.permissions).toEqual([shared]);
  });

  // Every change is seen by the very next verification on this instance
  // (docs/caching.md). The first verification caches the key's record, roles'
  // permissions included; setting the role's permissions must evict it.
  it("a key holding the role sees the new set on its very next verification", async () => {
    const rk = await admin(h);
    const { roleId, name } = await createRole(["billing.read", "billing.*"]);
    const { key } = await createKey(h, await createApi(h), { roles: [name], permissions: ["profile.read"] });

    expect(await verifyKey(h, key, { permissions: "billing.read" })).toMatchObject({ valid: true, code: "VALID" });
    expect(await verifyKey(h, key, { permissions: "documents.write" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });

    expectOk(await h.post(PATH, { roleId, permissions: ["documents.*"] }, rk));
    const after = await verifyKey(h, key, { permissions: "billing.read" });
    expect(after).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", roles: [name] });
    expect(after.permissions).toEqual(["documents.*", "profile.read"]);
    expect(await verifyKey(h, key, { permissions: "documents.write AND profile.read" })).toMatchObject({ valid: true, code: "VALID" });

    // Clearing the role leaves the key its direct permission only.
    expectOk(await h.post(PATH, { roleId: name, permissions: [] }, rk));
    expect(await verifyKey(h, key, { permissions: "documents.write" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "profile.read" })).toMatchObject({ valid: true, code: "VALID" });
  });

  // Control for the test above: the verification really is served from the
  // cache, so only the eviction can make the difference.
  it("control: the record is cached, so a change behind keyhold's back is not seen until setRolePermissions evicts it", async () => {
    const rk = await admin(h);
    const { roleId, name } = await createRole(["cache.read"]);
    const { key } = await createKey(h, await createApi(h), { roles: [name] });
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: true });

    await h.db.pool.query("DELETE FROM roles_permissions WHERE role_id = ?", [roleId]);
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: true }); // stale, from the cache

    expectOk(await h.post(PATH, { roleId, permissions: ["cache.write"] }, rk));
    expect(await verifyKey(h, key, { permissions: "cache.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "cache.write" })).toMatchObject({ valid: true });
  });

  it("writes one role.set_permissions record by the calling root key, naming the role and the permissions added and removed", async () => {
    const [keep, drop, add] = [uid("keep.read"), uid("drop.read"), uid("add.read")];
    expectOk(await h.post("/v2/permissions.createPermission", { name: add, slug: add }, await admin(h)));
    const { roleId } = await createRole([keep, drop]);
    const dropId = await permissionId(drop);
    const rk = await h.rootKey([ADD, REMOVE]);
    const res = await h.post(PATH, { roleId, permissions: [keep, add] }, rk, { "user-agent": "set-role-test/1.0" });
    expectOk(res);
    const records = await recordsOf(res.body.meta.requestId);
    expect(records.map((r) => r.action)).toEqual(["role.set_permissions"]);
    const [record] = records;
    const [rootKeys] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM root_keys WHERE workspace_id = ? ORDER BY pk DESC LIMIT 1", [h.workspaceId]);
    expect(record).toMatchObject({
      workspace_id: h.workspaceId,
      actor_type: "root_key",
      actor_id: rootKeys[0]?.id,
      user_agent: "set-role-test/1.0",
      description: "Set the role's permissions: added 1 permission and removed 1 permission.",
    });
    expect(record.resources).toEqual([
      { type: "role", id: roleId },
      { type: "permission", id: await permissionId(add) },
      { type: "permission", id: dropId },
    ]);
  });

  it("a slug created on the way gets its own permission.create record before the role's", async () => {
    const fresh = [uid("fresh.a"), uid("fresh.b")];
    const { roleId } = await createRole();
    const res = await h.post(PATH, { roleId, permissions: fresh }, await h.rootKey([ADD, REMOVE, CREATE]));
    const data = expectOk(res) as Json[];
    const records = await recordsOf(res.body.meta.requestId);
    expect(records.map((r) => r.action)).toEqual(["permission.create", "role.set_permissions"]);
    const ids = data.map((p) => p.id as string).sort();
    expect(records[0].resources.map((r: Json) => r.id).sort()).toEqual(ids);
    expect(records[1].resources[0]).toEqual({ type: "role", id: roleId });
    expect(
      records[1].resources
        .slice(1)
        .map((r: Json) => r.id)
        .sort(),
    ).toEqual(ids);
  });

  it("accepts 1000 slugs of up to 128 characters", async () => {
    const { roleId } = await createRole();
    const slugs = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, "0")}.${"s".repeat(123)}`);
    const data = expectOk(await h.post(PATH, { roleId, permissions: slugs }, await admin(h))) as Json[];
    expect(data).toHaveLength(1000);
    expect(slugsOf(data)).toEqual(slugs);
  });

  it.each([["rbac.*"], ["*"]])("the grant %s covers every grant setRolePermissions can need", async (grant) => {
    const { roleId } = await createRole([uid("old.read")]);
    expectOk(await h.post(PATH, { roleId, permissions: [uid("glob.new")] }, await h.rootKey([grant])));
  });

  // Concurrent sets of one role apply one after another (the role's row is
  // locked): the role ends with exactly one of the requested sets, never a mix.
  it("concurrent sets of one role: each succeeds, and the role ends with exactly one of the sets", async () => {
    const rk = await admin(h);
    const { roleId } = await createRole();
    const sets = Array.from({ length: 6 }, (_, i) => Array.from({ length: 20 }, (_, j) => `race${i}.p${j}`));
    const results = await Promise.all(sets.map((permissions) => h.post(PATH, { roleId, permissions }, rk)));
    for (const r of results) expectOk(r);
    const final = slugsOf((await getRole(roleId)).permissions ?? []);
    expect(sets.map((s) => [...s].sort().join())).toContain(final.join());
  });
});
