import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError } from "../shared/helpers.js";

describe("keys.getKey 403", () => {
  const h = useHarness();

  it.each([
    ["no read_key", (_apiId: string) => ["apis.*.read_api", "apis.*.create_key", "apis.*.verify_key"]],
    ["read_key for another API only", (_apiId: string) => ["apis.api_someotherapi.read_key"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const rk = await h.rootKey(perms(apiId));
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("decrypt:true without decrypt_key -> 403, even with read_key", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { recoverable: true });
    const rk = await h.rootKey(["apis.*.read_key"]);
    expectError(h, await h.post("/v2/keys.getKey", { keyId, decrypt: true }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("decrypt:true with decrypt_key for another API only -> 403", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { recoverable: true });
    const rk = await h.rootKey(["apis.*.read_key", "apis.api_someotherapi.decrypt_key"]);
    expectError(h, await h.post("/v2/keys.getKey", { keyId, decrypt: true }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });
});
