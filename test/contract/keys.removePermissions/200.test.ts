// keys.removePermissions: `data` is the direct permissions that
// remain. A slug that exists but is not attached is a no-op; permissions that
// come from roles are not affected; the permissions themselves stay in the workspace.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, type Json, seedRole, uid, verifyKey } from "../shared/helpers.js";

const PATH = "/v2/keys.removePermissions";
const slugsOf = (data: Json[]): string[] => data.map((p) => p.slug as string).sort();

describe("keys.removePermissions 200", () => {
  const h = useHarness();

  it("removes the named permissions: data is the remaining Permission[]", async () => {
    const [a, b, c] = [uid("a.read"), uid("b.read"), uid("c.read")];
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a, b, c] });
    const data = expectOk(await h.post(PATH, { keyId, permissions: [a, c] }, await admin(h))) as Json[];
    expect(slugsOf(data)).toEqual([b]);
    expect(data[0]).toMatchObject({ id: expect.stringMatching(/^perm_/), name: b, slug: b });
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([b]);
  });

  it("removing every direct permission gives data: []", async () => {
    const a = uid("only.perm");
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a] });
    expect(expectOk(await h.post(PATH, { keyId, permissions: [a] }, await admin(h)))).toEqual([]);
    expect(expectOk(await getKey(h, keyId)).permissions).toBeUndefined();
  });

  it("a slug that exists but is not attached is a no-op, alone or with others", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const [a, b, elsewhere] = [uid("a.read"), uid("b.read"), uid("elsewhere.read")];
    await createKey(h, apiId, { permissions: [elsewhere] }); // the slug exists in the workspace
    const { keyId } = await createKey(h, apiId, { permissions: [a, b] });
    expect(slugsOf(expectOk(await h.post(PATH, { keyId, permissions: [elsewhere] }, rk)))).toEqual([a, b].sort());
    expect(slugsOf(expectOk(await h.post(PATH, { keyId, permissions: [elsewhere, a, a] }, rk)))).toEqual([b]);
    // Removing again is idempotent.
    expect(slugsOf(expectOk(await h.post(PATH, { keyId, permissions: [a] }, rk)))).toEqual([b]);
  });

  it("the permission stays in the workspace and on other keys", async () => {
    const apiId = await createApi(h);
    const shared = uid("shared.perm");
    const one = await createKey(h, apiId, { permissions: [shared] });
    const two = await createKey(h, apiId, { permissions: [shared] });
    expectOk(await h.post(PATH, { keyId: one.keyId, permissions: [shared] }, await admin(h)));
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, shared]);
    expect(rows).toHaveLength(1);
    expect(expectOk(await getKey(h, two.keyId)).permissions).toEqual([shared]);
  });

  it("permissions inherited from a role are not affected, even when the same slug is also direct", async () => {
    const apiId = await createApi(h);
    const role = uid("editor");
    const both = uid("docs.write");
    await seedRole(h, role, [both]);
    const { keyId, key } = await createKey(h, apiId, { roles: [role], permissions: [both] });
    expect(expectOk(await h.post(PATH, { keyId, permissions: [both] }, await admin(h)))).toEqual([]);
    const got = expectOk(await getKey(h, keyId));
    expect(got.roles).toEqual([role]);
    expect(got.permissions).toEqual([both]);
    expect(await verifyKey(h, key, { permissions: both })).toMatchObject({ valid: true, code: "VALID" });
  });

  it("the very next verification sees the removal", async () => {
    const rk = await admin(h);
    const { keyId, key } = await createKey(h, await createApi(h), { permissions: ["documents.*"] });
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: true, code: "VALID" });
    expectOk(await h.post(PATH, { keyId, permissions: ["documents.*"] }, rk));
    expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
  });

  it("per-API update_key and rbac.*.remove_permission_from_key are enough", async () => {
    const apiId = await createApi(h);
    const [a, b] = [uid("a.read"), uid("b.read")];
    const { keyId } = await createKey(h, apiId, { permissions: [a, b] });
    const rk = await h.rootKey([`apis.${apiId}.update_key`, "rbac.*.remove_permission_from_key"]);
    expect(slugsOf(expectOk(await h.post(PATH, { keyId, permissions: [b] }, rk)))).toEqual([a]);
  });
});
