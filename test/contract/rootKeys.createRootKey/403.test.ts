import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectError } from "../shared/helpers.js";
import { createRootKey, GRANT, listed, listRootKeys } from "./support.js";

const path = "/v2/rootKeys.createRootKey";

describe("rootKeys.createRootKey 403", () => {
  const h = useHarness();

  it.each([
    ["every root-key grant but create_root_key", [GRANT.read, GRANT.update, GRANT.delete, GRANT.readAudit, "apis.*.read_api"]],
    ["create_root_key of another resource type", ["apis.*.create_root_key", "apis.*.read_api"]],
    ["unrelated create grants", ["apis.*.create_api", "apis.*.create_key", "apis.*.read_api"]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const rk = await h.rootKey(perms);
    expectError(h, await h.post(path, { permissions: ["apis.*.read_api"] }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  // The rule that keeps create_root_key from being every permission there is
  // (src/domain/auth/root-keys.ts): a root key gives only what its grants cover.
  it.each<[string, string[], string[]]>([
    ["a grant it does not hold", [GRANT.create, "apis.*.read_api"], ["apis.*.create_api"]],
    ["`*`", [GRANT.create, "apis.*.read_api"], ["*"]],
    ["a wider glob than its own", [GRANT.create, "apis.*.read_api"], ["apis.*"]],
    ["the same action on every API when it holds it for one", [GRANT.create, "apis.api_one.read_api"], ["apis.*.read_api"]],
    ["one grant beyond among covered ones", [GRANT.create, "apis.*.read_api"], ["apis.*.read_api", "apis.*.delete_api"]],
    ["another root-key grant", [GRANT.create], [GRANT.create, GRANT.delete]],
  ])("giving %s -> 403 insufficient_permissions, and no root key is made", async (_label, own, given) => {
    const rk = await h.rootKey(own);
    const before = (await listRootKeys(h)).length;
    const res = await h.post(path, { permissions: given }, rk);
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    // The detail names what is beyond the caller's grants.
    for (const g of given.filter((x) => !own.includes(x))) expect(res.body.error.detail).toContain(g);
    expect((await listRootKeys(h)).length).toBe(before);
  });

  // An expiring root key cannot mint one that outlives it: not without an expiry, not with a later one.
  it("an expiring root key giving no expiry or a later one -> 403; its own expiry or earlier -> 200", async () => {
    const own = Date.now() + 3_600_000;
    const { key } = await createRootKey(h, { permissions: [GRANT.create, GRANT.update, "apis.*.read_api"], expires: own });
    for (const body of [{}, { expires: own + 1 }]) {
      const res = await h.post(path, { permissions: ["apis.*.read_api"], ...body }, key);
      expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
      expect(res.body.error.detail).toContain(String(own));
    }
    expect((await h.post(path, { permissions: ["apis.*.read_api"], expires: own }, key)).status).toBe(200);
    const earlier = await h.post(path, { permissions: [GRANT.update, "apis.*.read_api"], expires: own - 60_000 }, key);
    expect(earlier.status, earlier.text).toBe(200);
    // Nor lift another key's expiry, nor rotate a never-expiring key into one that outlives it.
    const target = earlier.body.data.keyId;
    expectError(h, await h.post("/v2/rootKeys.updateRootKey", { keyId: target, expires: 0 }, key), 403, "err:svc:authorization:insufficient_permissions");
    const forever = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const rotated = await h.post("/v2/rootKeys.rotateRootKey", { keyId: forever.keyId, gracePeriodMs: 1_000 }, key);
    expect(rotated.status, rotated.text).toBe(200);
    expect((await listed(h, rotated.body.data.keyId))?.expires).toBe(own);
  });
});
