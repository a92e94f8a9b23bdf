import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, GRANT, pollUntil } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const path = "/v2/rootKeys.listRootKeys";

describe("rootKeys.listRootKeys 403", () => {
  const h = useHarness();

  it.each([
    ["every root-key grant but read_root_key", [GRANT.create, GRANT.update, GRANT.delete, GRANT.readAudit]],
    ["read grants of other resources", ["apis.*.read_api", "apis.*.read_key", "identity.*.read_identity"]],
    ["read_root_key of another resource type", ["apis.*.read_root_key"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const rk = await h.rootKey(perms);
    const res = await h.post(path, {}, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain(GRANT.read);
  });

  // The contract's table (§1.2): the root key's own state is a 403 with its own code.
  it("a disabled root key holding the grant -> 403 err:svc:authorization:key_disabled", async () => {
    const { keyId, key } = await createRootKey(h, { permissions: [GRANT.read] });
    expectOk(await h.post(path, {}, key));
    expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId, enabled: false }, await admin(h)));
    expectError(h, await h.post(path, {}, key), 403, "err:svc:authorization:key_disabled");
  });

  it("an expired root key holding the grant -> 403 err:svc:authorization:forbidden", async () => {
    const { key } = await createRootKey(h, { permissions: [GRANT.read], expires: Date.now() + 300 });
    const { ok } = await pollUntil(async () => (await h.post(path, {}, key)).status === 403, 5_000);
    expect(ok).toBe(true);
    expectError(h, await h.post(path, {}, key), 403, "err:svc:authorization:forbidden");
  });
});
