import { describe, expect, it } from "vitest";
import { newId } from "../../../src/core/ids.js";
import { useHarness } from "../../harness.js";
import { createRootKey, listRootKeys, readApiProbe, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk, uid } from "../shared/helpers.js";

const path = "/v2/rootKeys.deleteRootKey";

describe("rootKeys.deleteRootKey 404", () => {
  const h = useHarness();

  it("an unknown keyId -> 404 err:svc:data:key_not_found", async () => {
    expectError(h, await h.post(path, { keyId: newId("key") }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  it("a second revoke -> 404", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post(path, { keyId }, await admin(h)));
    expectError(h, await h.post(path, { keyId }, await admin(h)), 404, "err:svc:data:key_not_found");
  });

  // Another workspace's root key reads as unknown, so its id can be neither confirmed nor revoked.
  it("another workspace's root key -> 404, and it keeps working", async () => {
    const foreign = await seededRootKey(h, ["*"], uid("other_ws"));
    const theirs = await createRootKey(h, { permissions: ["apis.*.read_api"] }, foreign.key);
    expectError(h, await h.post(path, { keyId: theirs.keyId }, await admin(h)), 404, "err:svc:data:key_not_found");
    expect((await listRootKeys(h, foreign.key)).map((k) => k.keyId)).toContain(theirs.keyId);
    expect((await readApiProbe(h, theirs.key)).status).toBe(404);
  });

  it("an end-user key's id (not a root key) -> 404, and the key is untouched", async () => {
    const apiId = expectOk(await h.post("/v2/apis.createApi", { name: "end-user-keys" }, await admin(h))).apiId;
    const { keyId, key } = expectOk(await h.post("/v2/keys.createKey", { apiId }, await admin(h)));
    expectError(h, await h.post(path, { keyId }, await admin(h)), 404, "err:svc:data:key_not_found");
    expect(expectOk(await h.post("/v2/keys.verifyKey", { key }, await admin(h))).valid).toBe(true);
  });
});
