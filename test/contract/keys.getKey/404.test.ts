import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:key_not_found";

describe("keys.getKey 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 err:svc:data:key_not_found", async () => {
    expectError(h, await h.post("/v2/keys.getKey", { keyId: "key_doesnotexist0000" }, await admin(h)), 404, NOT_FOUND);
  });

  it("a soft-deleted key -> 404", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/keys.deleteKey", { keyId }, await admin(h)));
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, await admin(h)), 404, NOT_FOUND);
  });

  it("a permanently deleted key -> 404", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, await admin(h)));
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, await admin(h)), 404, NOT_FOUND);
  });

  it("a key of a deleted API -> 404", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, await admin(h)));
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, await admin(h)), 404, NOT_FOUND);
  });

  // Another workspace's key reads as missing, so key ids of other workspaces cannot be confirmed.
  it("another workspace's key -> 404, with decrypt too", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { recoverable: true });
    const stranger = await foreignAdmin(h);
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, stranger), 404, NOT_FOUND);
    expectError(h, await h.post("/v2/keys.getKey", { keyId, decrypt: true }, stranger), 404, NOT_FOUND);
  });
});
