import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { allLogs, createRootKey, GRANT, listRootKeys, readApiProbe, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const path = "/v2/rootKeys.deleteRootKey";

describe("rootKeys.deleteRootKey 200", () => {
  const h = useHarness();

  it("data is {}; the root key answers 401 key_not_found at once and is no longer listed", async () => {
    const { keyId, key } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect((await readApiProbe(h, key)).status).toBe(404); // authenticated, and cached
    expect(expectOk(await h.post(path, { keyId }, await admin(h)))).toEqual({});
    expectError(h, await readApiProbe(h, key), 401, "err:svc:authentication:key_not_found");
    expect((await listRootKeys(h)).map((k) => k.keyId)).not.toContain(keyId);
  });

  it("revoking one root key leaves the others alone", async () => {
    const gone = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const kept = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post(path, { keyId: gone.keyId }, await admin(h)));
    expect((await readApiProbe(h, kept.key)).status).toBe(404);
    expect((await listRootKeys(h)).map((k) => k.keyId)).toContain(kept.keyId);
  });

  it("a root key may revoke itself", async () => {
    const self = await seededRootKey(h, [GRANT.delete]);
    expect(expectOk(await h.post(path, { keyId: self.keyId }, self.key))).toEqual({});
    expectError(h, await h.post(path, { keyId: self.keyId }, self.key), 401, "err:svc:authentication:key_not_found");
  });

  it("delete_root_key with grants covering the key is enough; a disabled root key can be revoked", async () => {
    const rk = await h.rootKey([GRANT.delete, "apis.*.read_api"]);
    const { keyId, key } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId, enabled: false }, await admin(h)));
    expectOk(await h.post(path, { keyId }, rk));
    expectError(h, await readApiProbe(h, key), 401, "err:svc:authentication:key_not_found");
  });

  it("is audited: root_key.delete on the key, by the calling root key", async () => {
    const caller = await seededRootKey(h, ["*"]);
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post(path, { keyId }, caller.key));
    const [last] = await allLogs(h, { resourceId: keyId });
    expect(last).toMatchObject({
      action: "root_key.delete",
      actor: { type: "root_key", id: caller.keyId },
      resources: [{ type: "root_key", id: keyId }],
    });
  });
});
