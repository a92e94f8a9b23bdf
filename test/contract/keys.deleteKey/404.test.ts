import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin, verifyKey } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:key_not_found";

describe("keys.deleteKey 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 key_not_found", async () => {
    expectError(h, await h.post("/v2/keys.deleteKey", { keyId: "key_doesnotexist0000" }, await admin(h)), 404, NOT_FOUND);
  });

  it.each([
    ["soft", false],
    ["permanent", true],
  ])("a second delete after a %s delete -> 404", async (_label, permanent) => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent }, rk));
    expectError(h, await h.post("/v2/keys.deleteKey", { keyId }, rk), 404, NOT_FOUND);
    expectError(h, await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, rk), 404, NOT_FOUND);
  });

  it("a key of a deleted API -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post("/v2/keys.deleteKey", { keyId }, rk), 404, NOT_FOUND);
  });

  // Another workspace's key reads as missing (and is not deleted).
  it("another workspace's key -> 404, and it still verifies", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expectError(h, await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, await foreignAdmin(h)), 404, NOT_FOUND);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
  });
});
