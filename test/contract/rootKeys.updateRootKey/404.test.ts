import { describe, expect, it } from "vitest";
import { newId } from "../../../src/core/ids.js";
import { useHarness } from "../../harness.js";
import { createRootKey, listRootKeys, readApiProbe, seededRootKey, withoutLastUse } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

const path = "/v2/rootKeys.updateRootKey";

describe("rootKeys.updateRootKey 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 err:svc:data:key_not_found", async () => {
    expectError(h, await h.post(path, { keyId: newId("key"), enabled: false }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  it("a revoked root key -> 404", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.deleteRootKey", { keyId }, await admin(h)));
    expectError(h, await h.post(path, { keyId, enabled: true }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  // Another workspace's root key reads as unknown: its id can be neither confirmed nor changed.
  it("another workspace's root key -> 404, and it is untouched", async () => {
    const foreign = await seededRootKey(h, ["*"], uid("other_ws"));
    const theirs = await createRootKey(h, { name: "theirs", permissions: ["apis.*.read_api"] }, foreign.key);
    // lastUsedAt is left out: the foreign key's own use is written behind meanwhile.
    const state = async () => withoutLastUse(await listRootKeys(h, foreign.key));
    const before = await state();
    const res = await h.post(path, { keyId: theirs.keyId, enabled: false, name: "hijacked", permissions: ["apis.*.read_api"] }, await admin(h));
    expectError(h, res, 404, "err:svc:data:key_not_found");
    expect(await state()).toEqual(before);
    expect((await readApiProbe(h, theirs.key)).status).toBe(404); // still authenticates
  });

  it("an end-user key's id (not a root key) -> 404", async () => {
    const apiId = expectOk(await h.post("/v2/apis.createApi", { name: "end-user-keys" }, await admin(h))).apiId;
    const { keyId } = expectOk(await h.post("/v2/keys.createKey", { apiId }, await admin(h)));
    expectError(h, await h.post(path, { keyId, enabled: false }, await admin(h)), 404, "err:svc:data:key_not_found");
  });
});
