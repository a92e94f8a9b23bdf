import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, GRANT, listRootKeys, readApiProbe, withoutLastUse } from "../rootKeys.createRootKey/support.js";
import { expectError } from "../shared/helpers.js";

const path = "/v2/rootKeys.rotateRootKey";

describe("rootKeys.rotateRootKey 403", () => {
  const h = useHarness();

  // Rotation issues a root key and changes one: it needs both grants.
  it.each([
    ["create_root_key without update_root_key", [GRANT.create, GRANT.read, GRANT.delete, "apis.*.read_api"], GRANT.update],
    ["update_root_key without create_root_key", [GRANT.update, GRANT.read, GRANT.delete, "apis.*.read_api"], GRANT.create],
    ["neither", [GRANT.read, GRANT.delete, "apis.*.read_api"], GRANT.create],
  ])("a root key with %s -> 403 insufficient_permissions, and nothing is rotated", async (_label, perms, missing) => {
    const target = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const rk = await h.rootKey(perms);
    const before = withoutLastUse(await listRootKeys(h));
    const res = await h.post(path, { keyId: target.keyId, gracePeriodMs: 0 }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain(missing);
    expect(withoutLastUse(await listRootKeys(h))).toEqual(before);
    expect((await readApiProbe(h, target.key)).status).toBe(404);
  });

  // A rotation hands out a new secret with the old key's grants: a caller may do
  // that only for keys whose grants its own cover.
  it.each<[string, string[]]>([
    ["a grant the caller lacks", ["apis.*.read_api", "apis.*.delete_api"]],
    ["`*`", ["*"]],
  ])("rotating a root key holding %s -> 403; no new key, and the old secret keeps working", async (_label, perms) => {
    const target = await createRootKey(h, { permissions: perms });
    const rk = await h.rootKey([GRANT.create, GRANT.update, "apis.*.read_api"]);
    const before = withoutLastUse(await listRootKeys(h));
    expectError(h, await h.post(path, { keyId: target.keyId, gracePeriodMs: 0 }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect(withoutLastUse(await listRootKeys(h))).toEqual(before);
    expect((await readApiProbe(h, target.key)).status).toBe(404);
  });
});
