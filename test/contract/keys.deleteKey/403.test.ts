import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError, verifyKey } from "../shared/helpers.js";

describe("keys.deleteKey 403", () => {
  const h = useHarness();

  it.each([
    ["no delete_key", ["apis.*.read_key", "apis.*.create_key", "apis.*.delete_api"]],
    ["delete_key for another API only", ["apis.api_someotherapi.delete_key"]],
  ])("a root key with %s -> 403, and the key still verifies", async (_label, perms) => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    for (const permanent of [false, true]) {
      expectError(h, await h.post("/v2/keys.deleteKey", { keyId, permanent }, await h.rootKey(perms)), 403, "err:svc:authorization:insufficient_permissions");
    }
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
  });
});
