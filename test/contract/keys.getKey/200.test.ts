import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, seedRole, uid, verifyKey } from "../shared/helpers.js";

describe("keys.getKey 200", () => {
  const h = useHarness();

  it("returns the key's stored fields as KeyResponseData", async () => {
    const apiId = await createApi(h);
    const role = uid("reader");
    await seedRole(h, role, ["reports.read"]);
    const externalId = uid("acme");
    const expires = Date.now() + 3_600_000;
    const meta = { team: "core", n: 1 };
    const before = Date.now();
    const { keyId, key } = await createKey(h, apiId, {
      prefix: "gk",
      name: "reader",
      meta,
      expires,
      externalId,
      roles: [role],
      permissions: ["documents.read"],
      credits: { remaining: 42, refill: { interval: "monthly", amount: 100, refillDay: 15 } },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }],
      enabled: true,
    });
    const data = expectOk(await getKey(h, keyId));
    expect(data).toEqual({
      keyId,
      start: `gk_${key.slice(3, 7)}`,
      enabled: true,
      createdAt: expect.any(Number),
      name: "reader",
      meta,
      expires,
      permissions: expect.arrayContaining(["documents.read", "reports.read"]),
      roles: [role],
      credits: { remaining: 42, refill: { interval: "monthly", amount: 100, refillDay: 15 } },
      identity: { id: expect.stringMatching(/^id_/), externalId },
      ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "requests", limit: 10, duration: 60_000, autoApply: true }],
    });
    expect(data.permissions).toHaveLength(2);
    expect(data.createdAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(data.createdAt).toBeLessThanOrEqual(Date.now() + 1_000);
  });

  it("a plain key: only keyId, start, enabled and createdAt (empty fields are omitted, never null)", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(expectOk(await getKey(h, keyId))).toEqual({ keyId, start: key.slice(0, 4), enabled: true, createdAt: expect.any(Number) });
  });

  it("a disabled key reads enabled:false", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { enabled: false });
    expect(expectOk(await getKey(h, keyId)).enabled).toBe(false);
  });

  it("never returns the key string of a key that is not recoverable", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { prefix: "sec" });
    for (const extra of [{}, { decrypt: true }, { decrypt: false }]) {
      const res = await getKey(h, keyId, extra);
      expect(expectOk(res).plaintext).toBeUndefined();
      expect(res.text.includes(key)).toBe(false);
    }
  });

  it("decrypt:true returns the plaintext of a recoverable key", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { recoverable: true, prefix: "rec" });
    expect(expectOk(await getKey(h, keyId, { decrypt: true })).plaintext).toBe(key);
    // ...and the plaintext is a working key.
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, keyId });
  });

  it("without decrypt a recoverable key has no plaintext", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { recoverable: true });
    expect(expectOk(await getKey(h, keyId)).plaintext).toBeUndefined();
    expect(expectOk(await getKey(h, keyId, { decrypt: false })).plaintext).toBeUndefined();
  });

  it("per-API read_key and decrypt_key grants are enough", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { recoverable: true });
    const rk = await h.rootKey([`apis.${apiId}.read_key`, `apis.${apiId}.decrypt_key`]);
    expect(expectOk(await h.post("/v2/keys.getKey", { keyId, decrypt: true }, rk)).plaintext).toBe(key);
  });

  it("lastUsedAt appears once the key has been verified (approximate, written behind)", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(expectOk(await getKey(h, keyId)).lastUsedAt).toBeUndefined();
    const before = Date.now();
    await verifyKey(h, key);
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    const used = expectOk(await getKey(h, keyId)).lastUsedAt;
    expect(used).toBeTypeOf("number");
    expect(used).toBeGreaterThanOrEqual(before - 1_000);
    expect(used).toBeLessThanOrEqual(Date.now() + 1_000);
  });

  it("credits show the balance after verifications", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 3 } });
    await verifyKey(h, key);
    expect(expectOk(await h.post("/v2/keys.getKey", { keyId }, await admin(h))).credits).toEqual({ remaining: 2 });
  });
});
