// keys.addPermissions on a key that cannot be found: 404 key_not_found.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, getKey } from "../shared/helpers.js";

const PATH = "/v2/keys.addPermissions";
const NOT_FOUND = "err:svc:data:key_not_found";

describe("keys.addPermissions 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found, and no permission is created", async () => {
    const slug = "never.created.by.a.404";
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", permissions: [slug] }, await admin(h)), 404, NOT_FOUND);
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE slug = ?", [slug]);
    expect(rows).toEqual([]);
  });

  it.each([
    ["soft", false],
    ["permanent", true],
  ])("a key removed by a %s delete -> 404", async (_label, permanent) => {
    const rk = await admin(h);
    const { keyId } = await createKey(h, await createApi(h));
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent }, rk));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, rk), 404, NOT_FOUND);
  });

  it("a key of a deleted API -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, rk), 404, NOT_FOUND);
  });

  // Another workspace's key reads as missing, so a root key cannot learn that it exists.
  it("another workspace's key -> 404, and it is not changed", async () => {
    const { keyId } = await createKey(h, await createApi(h));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, await foreignAdmin(h)), 404, NOT_FOUND);
    expect(expectOk(await getKey(h, keyId)).permissions).toBeUndefined();
  });
});
