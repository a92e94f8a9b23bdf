// keys.removeRoles 404s: key_not_found for a key that cannot
// be found; role_not_found ("Role '<name>' was not found.") for an unknown name,
// in which case nothing is removed.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, getKey, seedRole, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.removeRoles";
const KEY_NOT_FOUND = "err:svc:data:key_not_found";
const ROLE_NOT_FOUND = "err:svc:data:role_not_found";

describe("keys.removeRoles 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found", async () => {
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", roles: ["admin"] }, await admin(h)), 404, KEY_NOT_FOUND);
  });

  it.each([
    ["soft", false],
    ["permanent", true],
  ])("a key removed by a %s delete -> 404 key_not_found", async (_label, permanent) => {
    const rk = await admin(h);
    const role = uid("role");
    await seedRole(h, role);
    const { keyId } = await createKey(h, await createApi(h), { roles: [role] });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent }, rk));
    expectError(h, await h.post(PATH, { keyId, roles: [role] }, rk), 404, KEY_NOT_FOUND);
  });

  it("a key of a deleted API -> 404 key_not_found", async () => {
    const rk = await admin(h);
    const role = uid("role");
    await seedRole(h, role);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { roles: [role] });
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post(PATH, { keyId, roles: [role] }, rk), 404, KEY_NOT_FOUND);
  });

  // Another workspace's key reads as missing, so a root key cannot learn that it exists.
  it("another workspace's key -> 404 key_not_found, and it keeps its roles", async () => {
    const role = uid("role");
    await seedRole(h, role);
    const { keyId } = await createKey(h, await createApi(h), { roles: [role] });
    expectError(h, await h.post(PATH, { keyId, roles: [role] }, await foreignAdmin(h)), 404, KEY_NOT_FOUND);
    expect(expectOk(await getKey(h, keyId)).roles).toEqual([role]);
  });

  it("an unknown role -> 404 role_not_found naming it; the known roles in the request stay attached", async () => {
    const known = uid("known");
    await seedRole(h, known);
    const ghost = uid("ghost");
    const { keyId } = await createKey(h, await createApi(h), { roles: [known] });
    expectError(h, await h.post(PATH, { keyId, roles: [known, ghost] }, await admin(h)), 404, ROLE_NOT_FOUND, `Role '${ghost}' was not found.`);
    expect(expectOk(await getKey(h, keyId)).roles).toEqual([known]);
  });
});
