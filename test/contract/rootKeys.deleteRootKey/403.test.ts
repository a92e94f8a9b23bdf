import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, GRANT, listed, readApiProbe } from "../rootKeys.createRootKey/support.js";
import { expectError } from "../shared/helpers.js";

const path = "/v2/rootKeys.deleteRootKey";

describe("rootKeys.deleteRootKey 403", () => {
  const h = useHarness();

  it.each([
    ["every root-key grant but delete_root_key", [GRANT.create, GRANT.read, GRANT.update, GRANT.readAudit, "apis.*.read_api"]],
    ["delete grants of other resources", ["apis.*.delete_key", "apis.*.delete_api", "apis.*.read_api"]],
  ])("a root key with %s -> 403 insufficient_permissions, and the target keeps working", async (_label, perms) => {
    const target = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const res = await h.post(path, { keyId: target.keyId }, await h.rootKey(perms));
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain(GRANT.delete);
    expect(await listed(h, target.keyId)).toBeDefined();
    expect((await readApiProbe(h, target.key)).status).toBe(404);
  });

  // Revoking is managing: a caller revokes only root keys its own grants cover,
  // so delete_root_key alone cannot take out the workspace's admin key.
  it.each<[string, string[]]>([
    ["a grant the caller lacks", ["apis.*.read_api", "apis.*.create_api"]],
    ["`*`", ["*"]],
  ])("revoking a root key holding %s -> 403, and it keeps working", async (_label, perms) => {
    const target = await createRootKey(h, { permissions: perms });
    const rk = await h.rootKey([GRANT.delete, "apis.*.read_api"]);
    expectError(h, await h.post(path, { keyId: target.keyId }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect(await listed(h, target.keyId)).toBeDefined();
    expect((await readApiProbe(h, target.key)).status).toBe(404);
  });
});
