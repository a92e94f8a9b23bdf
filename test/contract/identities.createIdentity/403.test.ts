import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError } from "../shared/helpers.js";

describe("identities.createIdentity 403", () => {
  const h = useHarness();

  it.each([
    ["every identity action but create_identity", ["identity.*.read_identity", "identity.*.update_identity", "identity.*.delete_identity"]],
    ["create_identity for one identity id only", ["identity.id_123.create_identity"]],
    ["another resource's create grant", ["apis.*.create_api", "apis.*.create_key"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const rk = await h.rootKey(perms);
    const res = await h.post("/v2/identities.createIdentity", { externalId: "user_1" }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
  });
});
