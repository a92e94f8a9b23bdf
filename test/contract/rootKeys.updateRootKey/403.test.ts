import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, GRANT, listed, readApiProbe } from "../rootKeys.createRootKey/support.js";
import { expectError } from "../shared/helpers.js";

const path = "/v2/rootKeys.updateRootKey";

describe("rootKeys.updateRootKey 403", () => {
  const h = useHarness();

  it.each([
    ["every root-key grant but update_root_key", [GRANT.create, GRANT.read, GRANT.delete, GRANT.readAudit, "apis.*.read_api"]],
    ["update grants of other resources", ["apis.*.update_key", "apis.*.update_api", "apis.*.read_api"]],
  ])("a root key with %s -> 403 insufficient_permissions, and the target is unchanged", async (_label, perms) => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const before = await listed(h, keyId);
    const rk = await h.rootKey(perms);
    const res = await h.post(path, { keyId, enabled: false }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain(GRANT.update);
    expect(await listed(h, keyId)).toEqual(before);
  });

  // A root key manages only root keys whose grants its own cover (src/domain/auth/root-keys.ts):
  // otherwise update_root_key could disable, or re-grant, a more powerful key.
  it("disabling a root key that holds more than the caller -> 403, and it keeps working", async () => {
    const target = await createRootKey(h, { permissions: ["apis.*.read_api", "apis.*.create_api"] });
    const rk = await h.rootKey([GRANT.update, "apis.*.read_api"]);
    const res = await h.post(path, { keyId: target.keyId, enabled: false }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain("apis.*.create_api");
    expect((await listed(h, target.keyId))?.enabled).toBe(true);
    expect((await readApiProbe(h, target.key)).status).toBe(404);
  });

  it("narrowing the grants of a `*` root key -> 403, and its grants are unchanged", async () => {
    const target = await createRootKey(h, { permissions: ["*"] });
    const rk = await h.rootKey([GRANT.update, "apis.*.read_api"]);
    expectError(h, await h.post(path, { keyId: target.keyId, permissions: ["apis.*.read_api"] }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect((await listed(h, target.keyId))?.permissions).toEqual(["*"]);
  });

  it.each<[string, string[]]>([
    ["a grant the caller does not hold", ["apis.*.delete_api"]],
    ["`*`", ["*"]],
    ["the caller's own update grant plus one beyond", [GRANT.update, GRANT.delete]],
  ])("giving %s to a root key it covers -> 403, and its grants are unchanged", async (_label, given) => {
    const target = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const rk = await h.rootKey([GRANT.update, "apis.*.read_api"]);
    expectError(h, await h.post(path, { keyId: target.keyId, permissions: given }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect((await listed(h, target.keyId))?.permissions).toEqual(["apis.*.read_api"]);
  });

  it("a root key cannot widen its own grants", async () => {
    const self = await createRootKey(h, { permissions: [GRANT.update, GRANT.read] });
    expectError(h, await h.post(path, { keyId: self.keyId, permissions: ["*"] }, self.key), 403, "err:svc:authorization:insufficient_permissions");
    expect((await listed(h, self.keyId))?.permissions).toEqual([GRANT.update, GRANT.read]);
  });
});
