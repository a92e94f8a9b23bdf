import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, createKey, expectError } from "../shared/helpers.js";

describe("keys.verifyKey 403", () => {
  const h = useHarness();

  // A root key with no verify grant of any kind cannot be probing: it is told so
  // plainly (docs/auth.md, "401 or 403"). One that may verify some API gets NOT_FOUND instead (200.test.ts).
  it.each([
    ["read_key only", ["apis.*.read_key"]],
    ["every other key action", ["apis.*.create_key", "apis.*.read_key", "apis.*.delete_key", "apis.*.update_key", "apis.*.read_api"]],
    ["another resource's grants", ["ratelimit.*.limit", "identity.*.read_identity"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const rk = await h.rootKey(perms);
    expectError(h, await h.post("/v2/keys.verifyKey", { key }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("no verify grant and an unknown key -> 403 too", async () => {
    const rk = await h.rootKey(["apis.*.read_key"]);
    expectError(h, await h.post("/v2/keys.verifyKey", { key: "nope_3xYzAbCdEfGhJkLmNpQrSt" }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });
});
