import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { allLogs, createRootKey, GRANT, listed, readApiProbe, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, createApi, expectError, expectOk } from "../shared/helpers.js";

const path = "/v2/rootKeys.updateRootKey";

describe("rootKeys.updateRootKey 200", () => {
  const h = useHarness();

  it("data is the root key after the change (as listed), and the listing agrees", async () => {
    const { keyId, key } = await createRootKey(h, { name: "before", permissions: ["apis.*.read_api"] });
    const expires = Date.now() + 7_200_000;
    const res = await h.post(path, { keyId, name: "after", permissions: ["apis.*.read_key", "apis.*.read_api"], expires }, await admin(h));
    const data = expectOk(res);
    expect(data).toEqual({
      keyId,
      name: "after",
      start: key.slice(0, 8),
      permissions: ["apis.*.read_key", "apis.*.read_api"],
      enabled: true,
      expires,
      createdAt: expect.any(Number),
    });
    expect(await listed(h, keyId)).toEqual(data);
    expect(res.text.includes(key)).toBe(false);
  });

  it("fields left out stay as they are", async () => {
    const expires = Date.now() + 3_600_000;
    const { keyId } = await createRootKey(h, { name: "keep", permissions: ["apis.*.read_api"], expires });
    const before = await listed(h, keyId);
    const data = expectOk(await h.post(path, { keyId, name: "renamed" }, await admin(h)));
    expect(data).toEqual({ ...before, name: "renamed" });
    expect(expectOk(await h.post(path, { keyId }, await admin(h)))).toEqual({ ...before, name: "renamed" });
  });

  it('name "" clears the name', async () => {
    const { keyId } = await createRootKey(h, { name: "named", permissions: ["apis.*.read_api"] });
    expect(expectOk(await h.post(path, { keyId, name: "" }, await admin(h))).name).toBe("");
    expect((await listed(h, keyId))?.name).toBe("");
  });

  it("expires 0 removes the expiry; a new expiry is set", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"], expires: Date.now() + 60_000 });
    const cleared = expectOk(await h.post(path, { keyId, expires: 0 }, await admin(h)));
    expect(cleared).not.toHaveProperty("expires");
    expect(await listed(h, keyId)).not.toHaveProperty("expires");
    const later = Date.now() + 86_400_000;
    expect(expectOk(await h.post(path, { keyId, expires: later }, await admin(h))).expires).toBe(later);
    expect((await listed(h, keyId))?.expires).toBe(later);
  });

  it("permissions replace the grants: the removed one is refused at once, the added one works at once", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, key)).id).toBe(apiId);
    expectOk(await h.post(path, { keyId, permissions: ["apis.*.create_api"] }, await admin(h)));
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, key), 403, "err:svc:authorization:insufficient_permissions");
    expectOk(await h.post("/v2/apis.createApi", { name: "now-allowed" }, key));
  });

  it("enabled: false -> the root key answers 403 key_disabled at once; enabled: true -> it works again", async () => {
    const { keyId, key } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect((await readApiProbe(h, key)).status).toBe(404); // authenticated (and cached)
    expect(expectOk(await h.post(path, { keyId, enabled: false }, await admin(h))).enabled).toBe(false);
    expectError(h, await readApiProbe(h, key), 403, "err:svc:authorization:key_disabled");
    expect(expectOk(await h.post(path, { keyId, enabled: true }, await admin(h))).enabled).toBe(true);
    expect((await readApiProbe(h, key)).status).toBe(404);
  });

  it("a root key may change one it covers with grants it covers, itself included", async () => {
    const manager = await seededRootKey(h, [GRANT.update, "apis.*.read_api", "apis.*.read_key"]);
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect(expectOk(await h.post(path, { keyId, permissions: ["apis.*.read_key"] }, manager.key)).permissions).toEqual(["apis.*.read_key"]);
    expect(expectOk(await h.post(path, { keyId: manager.keyId, name: "me" }, manager.key)).name).toBe("me");
  });

  it("is audited: root_key.update on the key, by the calling root key, naming the fields (never their values)", async () => {
    const caller = await seededRootKey(h, ["*"]);
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post(path, { keyId, name: "secret-looking-name", enabled: false }, caller.key));
    const [last] = await allLogs(h, { resourceId: keyId, actions: ["root_key.update"] });
    expect(last).toMatchObject({
      action: "root_key.update",
      actor: { type: "root_key", id: caller.keyId },
      resources: [{ type: "root_key", id: keyId }],
    });
    expect(last.description).toContain("name");
    expect(last.description).toContain("enabled");
    expect(last.description).not.toContain("secret-looking-name");
  });
});
