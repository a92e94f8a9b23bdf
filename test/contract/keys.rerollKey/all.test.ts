import { describe, expect, it } from "vitest";
import { api, expectError, expectInvalid, key, verify } from "../../fixtures.js";
import { useHarness } from "../../harness.js";

describe("keys.rerollKey", () => {
  const h = useHarness();

  it("issues a new key with the old one's settings; the old key expires at once with expiration 0", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const old = await key(h, rk, apiId, {
      prefix: "sk_live",
      name: "svc",
      meta: { team: "a" },
      credits: { remaining: 9 },
      permissions: ["x.read"],
      externalId: "owner_1",
      ratelimits: [{ name: "rl1", limit: 100, duration: 60_000 }],
    });
    const res = await h.post("/v2/keys.rerollKey", { keyId: old.keyId, expiration: 0 }, rk);
    expect(res.status, res.text).toBe(200);
    const fresh = res.body.data as { keyId: string; key: string };
    expect(fresh.keyId).not.toBe(old.keyId);
    expect(fresh.key.startsWith("sk_live_")).toBe(true);
    expect((await verify(h, rk, old.key)).code).toBe("EXPIRED");
    const data = await verify(h, rk, fresh.key);
    expect(data).toMatchObject({ code: "VALID", name: "svc", meta: { team: "a" }, credits: 8, permissions: ["x.read"], identity: { externalId: "owner_1" } });
    expect(data.ratelimits[0]).toMatchObject({ name: "rl1", limit: 100 });
  });

  it("the old key keeps working during the grace period", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const old = await key(h, rk, apiId);
    await h.post("/v2/keys.rerollKey", { keyId: old.keyId, expiration: 3_600_000 }, rk);
    const data = await verify(h, rk, old.key);
    expect(data.code).toBe("VALID");
    expect(data.expires).toBeGreaterThan(Date.now() + 3_500_000);
  });

  it("re-encrypts a recoverable key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const old = await key(h, rk, apiId, { recoverable: true });
    const fresh = (await h.post("/v2/keys.rerollKey", { keyId: old.keyId, expiration: 0 }, rk)).body.data;
    const got = await h.post("/v2/keys.getKey", { keyId: fresh.keyId, decrypt: true }, rk);
    expect(got.body.data.plaintext).toBe(fresh.key);
  });

  it("400 for a missing or out-of-range expiration; 403 without create_key; 404 for an unknown key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    expectInvalid(h, await h.post("/v2/keys.rerollKey", { keyId: k.keyId, expiration: -1 }, rk), "expiration");
    expectInvalid(h, await h.post("/v2/keys.rerollKey", { keyId: k.keyId, expiration: "soon" }, rk), "expiration");
    expectError(
      h,
      await h.post("/v2/keys.rerollKey", { keyId: k.keyId, expiration: 0 }, await h.rootKey(["apis.*.read_key"])),
      403,
      "err:svc:authorization:insufficient_permissions",
    );
    expectError(h, await h.post("/v2/keys.rerollKey", { keyId: "key_nope00000", expiration: 0 }, rk), 404, "err:svc:data:key_not_found");
  });
});
