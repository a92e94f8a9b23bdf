// keys.setPermissions on a key that cannot be found: 404 key_not_found.
// Unknown slugs are created, never a 404.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, getKey } from "../shared/helpers.js";

const PATH = "/v2/keys.setPermissions";
const NOT_FOUND = "err:svc:data:key_not_found";

describe("keys.setPermissions 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found (with [] too), and no permission is created", async () => {
    const rk = await admin(h);
    const slug = "never.created.by.a.404";
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", permissions: [slug] }, rk), 404, NOT_FOUND);
    expectError(h, await h.post(PATH, { keyId: "key_doesnotexist0000", permissions: [] }, rk), 404, NOT_FOUND);
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
    expectError(h, await h.post(PATH, { keyId, permissions: [] }, rk), 404, NOT_FOUND);
  });

  it("a key of a deleted API -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post(PATH, { keyId, permissions: ["a.b"] }, rk), 404, NOT_FOUND);
  });

  // Another workspace's key reads as missing, so a root key cannot learn that it exists.
  it("another workspace's key -> 404, and it keeps its permissions", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["a.b"] });
    expectError(h, await h.post(PATH, { keyId, permissions: [] }, await foreignAdmin(h)), 404, NOT_FOUND);
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual(["a.b"]);
  });
});
