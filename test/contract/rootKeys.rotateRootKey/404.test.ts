import { describe, expect, it } from "vitest";
import { newId } from "../../../src/core/ids.js";
import { useHarness } from "../../harness.js";
import { createRootKey, listRootKeys, readApiProbe, seededRootKey, withoutLastUse } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

const path = "/v2/rootKeys.rotateRootKey";

describe("rootKeys.rotateRootKey 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 err:svc:data:key_not_found", async () => {
    expectError(h, await h.post(path, { keyId: newId("key"), gracePeriodMs: 0 }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  it("a revoked root key -> 404", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.deleteRootKey", { keyId }, await admin(h)));
    expectError(h, await h.post(path, { keyId, gracePeriodMs: 0 }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  it("a key rotated with no grace period is gone: rotating it again -> 404", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post(path, { keyId, gracePeriodMs: 0 }, await admin(h)));
    expectError(h, await h.post(path, { keyId, gracePeriodMs: 0 }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  // Another workspace's root key reads as unknown: rotating it would hand its grants to this caller.
  it("another workspace's root key -> 404; it is untouched and no key is added on either side", async () => {
    const foreign = await seededRootKey(h, ["*"], uid("other_ws"));
    const theirs = await createRootKey(h, { permissions: ["apis.*.read_api"] }, foreign.key);
    const theirsBefore = withoutLastUse(await listRootKeys(h, foreign.key));
    const mineBefore = withoutLastUse(await listRootKeys(h));
    expectError(h, await h.post(path, { keyId: theirs.keyId, gracePeriodMs: 0 }, await admin(h)), 404, "err:svc:data:key_not_found");
    expect(withoutLastUse(await listRootKeys(h, foreign.key))).toEqual(theirsBefore);
    expect(withoutLastUse(await listRootKeys(h))).toEqual(mineBefore);
    expect((await readApiProbe(h, theirs.key)).status).toBe(404);
  });
});
