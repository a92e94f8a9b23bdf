import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, expectError, expectOk, listedKeyIds } from "../shared/helpers.js";

describe("keys.createKey 403", () => {
  const h = useHarness();

  it.each([
    ["no create_key at all", () => ["apis.*.create_api", "apis.*.read_api", "apis.*.read_key", "apis.*.verify_key"]],
    ["create_key for another API only", () => ["apis.api_someotherapi.create_key"]],
    ["encrypt_key but not create_key", () => ["apis.*.encrypt_key"]],
  ])("a root key with %s -> 403 insufficient_permissions, and no key is created", async (_label, perms) => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(perms());
    const res = await h.post("/v2/keys.createKey", { apiId }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.title).toBe("Forbidden");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it("recoverable:true without encrypt_key -> 403, even with create_key", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(["apis.*.create_key"]);
    expectError(h, await h.post("/v2/keys.createKey", { apiId, recoverable: true }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it("recoverable:true with encrypt_key for another API only -> 403", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(["apis.*.create_key", "apis.api_someotherapi.encrypt_key"]);
    expectError(h, await h.post("/v2/keys.createKey", { apiId, recoverable: true }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("the same root key may still create a key that is not recoverable", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(["apis.*.create_key"]);
    expectOk(await h.post("/v2/keys.createKey", { apiId, recoverable: false }, rk));
  });
});
