import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk } from "../shared/helpers.js";
import { allLogs, GRANT, listed, readApiProbe, seededRootKey } from "./support.js";

describe("rootKeys.createRootKey 200", () => {
  const h = useHarness();

  it("answers exactly {keyId, key}; the listing then shows it with its name, start, grants and expiry, never the secret", async () => {
    const expires = Date.now() + 3_600_000;
    const res = await h.post(
      "/v2/rootKeys.createRootKey",
      { name: "ci deploys", permissions: ["apis.*.read_api", "apis.*.create_api"], expires },
      await admin(h),
    );
    const data = expectOk(res);
    expect(data).toEqual({ keyId: expect.stringMatching(/^key_/), key: expect.stringMatching(/^svc_/) });

    const lr = await h.post("/v2/rootKeys.listRootKeys", {}, await admin(h));
    const row = (expectOk(lr) as Array<{ keyId: string }>).find((k) => k.keyId === data.keyId);
    expect(row).toEqual({
      keyId: data.keyId,
      name: "ci deploys",
      start: data.key.slice(0, 8),
      permissions: ["apis.*.read_api", "apis.*.create_api"],
      enabled: true,
      expires,
      createdAt: expect.any(Number),
    });
    expect(Math.abs((row as unknown as { createdAt: number }).createdAt - Date.now())).toBeLessThan(60_000);
    expect(lr.text.includes(data.key), "a listing never shows a secret").toBe(false);
  });

  it("the new root key works at once with exactly the grants given", async () => {
    const { key } = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, await admin(h)));
    const apiId = await createApi(h);
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, key)).id).toBe(apiId);
    expectError(h, await h.post("/v2/apis.createApi", { name: "not-granted" }, key), 403, "err:svc:authorization:insufficient_permissions");
  });

  it('without a name or an expiry: listed with name "" and no expires', async () => {
    const { keyId } = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, await admin(h)));
    const row = await listed(h, keyId);
    expect(row).toEqual({ keyId, name: "", start: expect.any(String), permissions: ["apis.*.read_api"], enabled: true, createdAt: expect.any(Number) });
  });

  it("a repeated grant is stored once", async () => {
    const { keyId } = expectOk(
      await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api", "apis.*.read_api", "apis.*.read_key"] }, await admin(h)),
    );
    expect((await listed(h, keyId))?.permissions).toEqual(["apis.*.read_api", "apis.*.read_key"]);
  });

  it("accepts the maximums: a 256-character name, 1,000 grants of 256 characters", async () => {
    const permissions = Array.from({ length: 1000 }, (_, i) => `apis.api_${String(i).padStart(4, "0")}.${"r".repeat(256 - 14)}`);
    expect(permissions.every((p) => p.length === 256)).toBe(true);
    const { keyId } = expectOk(await h.post("/v2/rootKeys.createRootKey", { name: "n".repeat(256), permissions }, await admin(h)));
    const row = await listed(h, keyId);
    expect(row?.name).toBe("n".repeat(256));
    expect(row?.permissions).toHaveLength(1000);
  });

  it("a root key holding only create_root_key may give grants it holds (its own included), and the covered ones its globs cover", async () => {
    const giver = await h.rootKey([GRANT.create, "apis.*.read_api"]);
    const own = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: [GRANT.create, "apis.*.read_api"] }, giver));
    expect((await listed(h, own.keyId))?.permissions).toEqual([GRANT.create, "apis.*.read_api"]);
    // apis.*.read_api covers the grant for one API.
    const apiId = await createApi(h);
    const narrower = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: [`apis.${apiId}.read_api`] }, giver));
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, narrower.key)).id).toBe(apiId);
  });

  it("a root key with an expiry stops working once it passes: 403 err:svc:authorization:forbidden", async () => {
    const { key } = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"], expires: Date.now() + 400 }, await admin(h)));
    expect((await readApiProbe(h, key)).status).toBe(404);
    let last = await readApiProbe(h, key);
    for (const start = Date.now(); last.status === 404 && Date.now() - start < 5_000; ) {
      await new Promise((r) => setTimeout(r, 50));
      last = await readApiProbe(h, key);
    }
    expectError(h, last, 403, "err:svc:authorization:forbidden");
  });

  it("is audited: root_key.create on the new key, by the calling root key", async () => {
    const caller = await seededRootKey(h, ["*"]);
    const { keyId } = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, caller.key));
    const logs = await allLogs(h, { resourceId: keyId });
    expect(logs).toEqual([
      expect.objectContaining({
        action: "root_key.create",
        actor: { type: "root_key", id: caller.keyId },
        resources: [{ type: "root_key", id: keyId }],
      }),
    ]);
  });
});
