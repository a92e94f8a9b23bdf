import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { allLogs, createRootKey, GRANT, listed, listRootKeys, pollUntil, readApiProbe, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

const path = "/v2/rootKeys.rotateRootKey";

describe("rootKeys.rotateRootKey 200", () => {
  const h = useHarness();

  it("answers exactly {keyId, key, previousExpires}: a new root key with the old one's name, grants, expiry and state", async () => {
    const expires = Date.now() + 86_400_000;
    const old = await createRootKey(h, { name: "deploys", permissions: ["apis.*.read_api", "apis.*.read_key"], expires });
    const before = Date.now();
    const data = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 60_000 }, await admin(h)));
    const after = Date.now();
    expect(data).toEqual({ keyId: expect.stringMatching(/^key_/), key: expect.stringMatching(/^svc_/), previousExpires: expect.any(Number) });
    expect(data.keyId).not.toBe(old.keyId);
    expect(data.key).not.toBe(old.key);
    expect(data.previousExpires).toBeGreaterThanOrEqual(before + 60_000);
    expect(data.previousExpires).toBeLessThanOrEqual(after + 60_000);
    expect(await listed(h, data.keyId)).toEqual({
      keyId: data.keyId,
      name: "deploys",
      start: data.key.slice(0, 8),
      permissions: ["apis.*.read_api", "apis.*.read_key"],
      enabled: true,
      expires,
      createdAt: expect.any(Number),
    });
    // The old one is still listed, now expiring at the end of the grace period.
    expect((await listed(h, old.keyId))?.expires).toBe(data.previousExpires);
  });

  it("both secrets work during the grace period", async () => {
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect((await readApiProbe(h, old.key)).status).toBe(404); // cached before the rotation
    const { key } = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 60_000 }, await admin(h)));
    expect((await readApiProbe(h, key)).status).toBe(404);
    expect((await readApiProbe(h, old.key)).status).toBe(404);
  });

  it("after the grace period the old secret is refused (403 forbidden: expired) and the new one works", async () => {
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const { key } = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 300 }, await admin(h)));
    const { ok } = await pollUntil(async () => (await readApiProbe(h, old.key)).status !== 404, 5_000);
    expect(ok).toBe(true);
    expectError(h, await readApiProbe(h, old.key), 403, "err:svc:authorization:forbidden");
    expect((await readApiProbe(h, key)).status).toBe(404);
  });

  it("gracePeriodMs 0 revokes the old secret at once (401 key_not_found) and unlists it", async () => {
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect((await readApiProbe(h, old.key)).status).toBe(404); // cached before the rotation
    const before = Date.now();
    const data = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 0 }, await admin(h)));
    expect(data.previousExpires).toBeGreaterThanOrEqual(before);
    expect(data.previousExpires).toBeLessThanOrEqual(Date.now());
    expectError(h, await readApiProbe(h, old.key), 401, "err:svc:authentication:key_not_found");
    expect((await readApiProbe(h, data.key)).status).toBe(404);
    expect((await listRootKeys(h)).map((k) => k.keyId)).not.toContain(old.keyId);
  });

  it("the old secret never outlives its own expiry: previousExpires is the earlier of the two", async () => {
    const expires = Date.now() + 120_000;
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"], expires });
    const data = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 2_592_000_000 }, await admin(h)));
    expect(data.previousExpires).toBe(expires);
    expect((await listed(h, old.keyId))?.expires).toBe(expires);
  });

  it("rotating a disabled root key gives a disabled one", async () => {
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId: old.keyId, enabled: false }, await admin(h)));
    const { keyId, key } = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 1_000 }, await admin(h)));
    expect((await listed(h, keyId))?.enabled).toBe(false);
    expectError(h, await readApiProbe(h, key), 403, "err:svc:authorization:key_disabled");
  });

  it("create_root_key and update_root_key, with grants covering the key, are enough", async () => {
    const rk = await h.rootKey([GRANT.create, GRANT.update, "apis.*.read_api"]);
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const { key } = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 0 }, rk));
    expect((await readApiProbe(h, key)).status).toBe(404);
  });

  it("is audited: root_key.rotate naming the old and the new key, by the calling root key", async () => {
    const caller = await seededRootKey(h, ["*"]);
    const old = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const { keyId } = expectOk(await h.post(path, { keyId: old.keyId, gracePeriodMs: 1_000 }, caller.key));
    for (const resourceId of [old.keyId, keyId]) {
      const [last] = await allLogs(h, { resourceId, actions: ["root_key.rotate"] });
      expect(last).toMatchObject({ action: "root_key.rotate", actor: { type: "root_key", id: caller.keyId } });
      expect(last.resources).toEqual(
        expect.arrayContaining([
          { type: "root_key", id: old.keyId },
          { type: "root_key", id: keyId },
        ]),
      );
      expect(JSON.stringify(last)).not.toContain(old.key.slice(8));
    }
  });
});
