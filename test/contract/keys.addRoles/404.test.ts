// keys.addRoles 404s: key_not_found for a key that cannot be
// found; role_not_found ("Role '<name>' was not found.") for an unknown name, in
// which case nothing changes.
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/core/ids.js";
import { ensureWorkspace } from "../../../src/storage/workspaces.js";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, getKey, seedRole, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.addRoles";
const KEY_NOT_FOUND = "err:svc:data:key_not_found";
const ROLE_NOT_FOUND = "err:svc:data:role_not_found";

describe("keys.addRoles 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found", async () => {
    const role = uid("role");
    await seedRole(h, role);
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", roles: [role] }, await admin(h)), 404, KEY_NOT_FOUND);
  });

  it.each([
    ["soft", false],
    ["permanent", true],
  ])("a key removed by a %s delete -> 404 key_not_found", async (_label, permanent) => {
    const rk = await admin(h);
    const role = uid("role");
    await seedRole(h, role);
    const { keyId } = await createKey(h, await createApi(h));
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent }, rk));
    expectError(h, await h.post(PATH, { keyId, roles: [role] }, rk), 404, KEY_NOT_FOUND);
  });

  it("a key of a deleted API -> 404 key_not_found", async () => {
    const rk = await admin(h);
    const role = uid("role");
    await seedRole(h, role);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post(PATH, { keyId, roles: [role] }, rk), 404, KEY_NOT_FOUND);
  });

  // Another workspace's key reads as missing, so a root key cannot learn that it exists.
  it("another workspace's key -> 404 key_not_found", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, roles: ["admin"] }, await foreignAdmin(h)), 404, KEY_NOT_FOUND);
  });

  it("an unknown role -> 404 role_not_found naming it; the known roles in the request are not attached", async () => {
    const known = uid("known");
    await seedRole(h, known);
    const ghost = uid("ghost");
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, roles: [known, ghost] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${ghost}' was not found.`);
    expect(expectOk(await getKey(h, keyId)).roles).toBeUndefined();
  });

  it("names are matched exactly: another case, or a trailing space, is unknown", async () => {
    const role = uid("exact");
    await seedRole(h, role);
    const { keyId } = await createKey(h, await createApi(h));
    const upper = role.toUpperCase();
    expectError(h, await h.post(PATH, { keyId, roles: [upper] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${upper}' was not found.`);
    expectError(h, await h.post(PATH, { keyId, roles: [`${role} `] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${role} ' was not found.`);
  });

  it("a role id is not a name -> 404 role_not_found", async () => {
    const roleId = await seedRole(h, uid("by_id"));
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, roles: [roleId] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${roleId}' was not found.`);
  });

  it("a role of another workspace -> 404 role_not_found", async () => {
    const now = Date.now();
    const other = await ensureWorkspace(h.db.pool, uid("other_ws"), now);
    const theirs = uid("theirs");
    await h.db.pool.execute("INSERT INTO roles (id, workspace_id, name, created_at_m) VALUES (?, ?, ?, ?)", [newId("role", now), other.id, theirs, now]);
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, roles: [theirs] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${theirs}' was not found.`);
  });
});
