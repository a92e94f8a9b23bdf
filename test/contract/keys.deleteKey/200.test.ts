import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, listedKeyIds, verifyKey } from "../shared/helpers.js";

describe("keys.deleteKey 200", () => {
  const h = useHarness();

  it.each([
    ["soft (default)", {}],
    ["soft (permanent:false)", { permanent: false }],
    ["permanent", { permanent: true }],
  ])("%s delete: data is {}, the key then verifies NOT_FOUND, getKey 404, and it is no longer listed", async (_label, extra) => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, {
      recoverable: true,
      permissions: ["a.b"],
      ratelimits: [{ name: "requests", limit: 5, duration: 60_000 }],
    });
    const kept = await createKey(h, apiId);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
    expect(expectOk(await h.post("/v2/keys.deleteKey", { keyId, ...extra }, rk))).toEqual({});
    expect(await verifyKey(h, key)).toEqual({ valid: false, code: "NOT_FOUND" });
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, rk), 404, "err:svc:data:key_not_found");
    expect(await listedKeyIds(h, apiId)).toEqual([kept.keyId]);
    expect(await verifyKey(h, kept.key)).toMatchObject({ valid: true, code: "VALID" });
  });

  it("a soft delete keeps the row: the key string stays unusable", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    expectOk(await h.post("/v2/keys.deleteKey", { keyId }, rk));
    const [rows] = await h.db.pool.query("SELECT deleted_at_m FROM `keys` WHERE id = ?", [keyId]);
    expect((rows as Array<{ deleted_at_m: unknown }>)[0]?.deleted_at_m).not.toBeNull();
  });

  it("a permanent delete removes the row", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId, { recoverable: true });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, rk));
    const [rows] = await h.db.pool.query("SELECT id FROM `keys` WHERE id = ?", [keyId]);
    expect(rows).toEqual([]);
    const [enc] = await h.db.pool.query("SELECT key_id FROM encrypted_keys WHERE key_id = ?", [keyId]);
    expect(enc).toEqual([]);
  });

  it("a per-API delete_key grant is enough", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const rk = await h.rootKey([`apis.${apiId}.delete_key`]);
    expect(expectOk(await h.post("/v2/keys.deleteKey", { keyId }, rk))).toEqual({});
  });
});
