import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError, uid } from "../shared/helpers.js";

describe("apis.createApi 403", () => {
  const h = useHarness();

  it.each([
    ["read_api only", ["apis.*.read_api"]],
    ["every other apis action", ["apis.*.read_api", "apis.*.delete_api", "apis.*.create_key", "apis.*.verify_key"]],
    // create_api exists only as apis.*: a per-API grant cannot create APIs.
    ["a per-API create_api grant", ["apis.api_123.create_api"]],
    ["another resource's wildcard", ["ratelimit.*.create_namespace", "identity.*.create_identity"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const rk = await h.rootKey(perms);
    const res = await h.post("/v2/apis.createApi", { name: uid("api") }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
  });
});
