// keys.removePermissions 404s: key_not_found for a key that
// cannot be found; permission_not_found ("Permission '<slug>' was not found.")
// for a slug the workspace does not have, in which case nothing is removed.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, getKey, uid } from "../shared/helpers.js";

const PATH = "/v2/keys.removePermissions";
const KEY_NOT_FOUND = "err:svc:data:key_not_found";
const PERMISSION_NOT_FOUND = "err:svc:data:permission_not_found";

describe("keys.removePermissions 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found", async () => {
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", permissions: ["a.b"] }, await admin(h)), 404, KEY_NOT_FOUND);
  });

  it.each([
    ["soft", false],
    ["permanent", true],
  ])("a key removed by a %s delete -> 404 key_not_found", async (_label, permanent) => {
    const rk = await admin(h);
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["a.b"] });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent }, rk));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, rk), 404, KEY_NOT_FOUND);
  });

  it("a key of a deleted API -> 404 key_not_found", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { permissions: ["a.b"] });
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, rk), 404, KEY_NOT_FOUND);
  });

  // Another workspace's key reads as missing, so a root key cannot learn that it exists.
  it("another workspace's key -> 404 key_not_found, and it keeps its permissions", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["a.b"] });
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, await foreignAdmin(h)), 404, KEY_NOT_FOUND);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual(["a.b"]);
  });

  it("a slug unknown in the workspace -> 404 permission_not_found naming it; nothing is removed", async () => {
    const a = uid("a.read");
    const ghost = uid("ghost.read");
    const { keyId } = await createKey(h, await createApi(h), { permissions: [a] });
    expectError(h, await h.post(PATH, { keyId, permissions: [a, ghost] }, await admin(h)), 404, PERMISSION_NOT_FOUND, `Permission '${ghost}' was not found.`);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual([a]);
  });

  it("slugs are matched exactly: another case is unknown", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["docs.read"] });
    expectError(
      h,
      await h.post(PATH, { keyId, permissions: ["Docs.Read"] }, await admin(h)),
      404,
      PERMISSION_NOT_FOUND,
      "Permission 'Docs.Read' was not found.",
    );
  });

  it("a slug that exists only in another workspace -> 404 permission_not_found", async () => {
    const foreign = await foreignAdmin(h);
    const otherApi = expectOk(await h.post("/v2/apis.createApi", { name: uid("api") }, foreign)).apiId as string;
    const theirs = uid("theirs.read");
    expectOk(await h.post("/v2/keys.createKey", { apiId: otherApi, permissions: [theirs] }, foreign));
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, permissions: [theirs] }, await admin(h)), 404, PERMISSION_NOT_FOUND, `Permission '${theirs}' was not found.`);
  });
});
