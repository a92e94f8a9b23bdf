import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const NOT_FOUND = "err:svc:data:key_not_found";

// keys.whoami takes a key string, so every "you may not see it" case answers
// 404 key_not_found: a 403 would confirm that the string is a real key (docs/auth.md, "401 or 403").
describe("keys.whoami 404", () => {
  const h = useHarness();

  it("an unknown key -> 404", async () => {
    expectError(h, await h.post("/v2/keys.whoami", { key: "nope_3xYzAbCdEfGhJkLmNpQrSt" }, await admin(h)), 404, NOT_FOUND);
  });

  it("a root key without read_key -> 404, not 403", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const rk = await h.rootKey(["apis.*.verify_key", "apis.*.read_api"]);
    expectError(h, await h.post("/v2/keys.whoami", { key }, rk), 404, NOT_FOUND);
  });

  it("a root key with read_key for another API only -> 404", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const rk = await h.rootKey(["apis.api_someotherapi.read_key"]);
    expectError(h, await h.post("/v2/keys.whoami", { key }, rk), 404, NOT_FOUND);
  });

  it("another workspace's key -> 404", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    expectError(h, await h.post("/v2/keys.whoami", { key }, await foreignAdmin(h)), 404, NOT_FOUND);
  });

  it("a deleted key, and a key of a deleted API -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const a = await createKey(h, apiId);
    expectOk(await h.post("/v2/keys.deleteKey", { keyId: a.keyId }, rk));
    expectError(h, await h.post("/v2/keys.whoami", { key: a.key }, rk), 404, NOT_FOUND);
    const other = await createApi(h);
    const b = await createKey(h, other);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: other }, rk));
    expectError(h, await h.post("/v2/keys.whoami", { key: b.key }, rk), 404, NOT_FOUND);
  });
});
