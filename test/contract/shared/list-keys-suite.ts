// apis.listKeys and keys.listKeys take the same request and list the same keys;
// only the envelope differs:
//   apis.listKeys: `data` is the array of keys, `pagination` beside it (as the SDK reads it);
//   keys.listKeys (keyhold's own): `data.keys` is the array, `pagination` beside `data`.
// Both folders run these suites with their own path.
import { describe, expect, it } from "vitest";
import type { Harness, Res } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectInvalid, expectOk, foreignAdmin, type Json, show, uid } from "./helpers.js";

export type ListPath = "/v2/apis.listKeys" | "/v2/keys.listKeys";

/** The rows of a list response, after checking the envelope shape of this path. */
export function listRows(path: ListPath, res: Res): Json[] {
  const data = expectOk(res, { pagination: true });
  if (path === "/v2/apis.listKeys") {
    expect(Array.isArray(data), `data must be the array of keys: ${show(res)}`).toBe(true);
    return data as Json[];
  }
  expect(Object.keys(data), show(res)).toEqual(["keys"]);
  expect(Array.isArray(data.keys), `data.keys must be an array: ${show(res)}`).toBe(true);
  return data.keys as Json[];
}

export function describeListKeys200(h: Harness, path: ListPath): void {
  describe(`${path} 200`, () => {
    it("lists the API's keys in keyId order, each as KeyResponseData", async () => {
      const apiId = await createApi(h);
      const a = await createKey(h, apiId, { name: "first", prefix: "lk" });
      const b = await createKey(h, apiId);
      const res = await h.post(path, { apiId }, await admin(h));
      const rows = listRows(path, res);
      expect(res.body.pagination).toEqual({ hasMore: false });
      expect(rows.map((k) => k.keyId)).toEqual([a.keyId, b.keyId].sort());
      const byId = new Map(rows.map((k) => [k.keyId, k]));
      expect(byId.get(a.keyId)).toEqual({
        keyId: a.keyId,
        name: "first",
        start: `lk_${a.key.slice(3, 7)}`,
        enabled: true,
        createdAt: expect.any(Number),
      });
      // Empty and absent fields are omitted, never null (src/gateway/json-response.ts).
      expect(byId.get(b.keyId)).toEqual({ keyId: b.keyId, start: b.key.slice(0, 4), enabled: true, createdAt: expect.any(Number) });
      expect(res.text.includes(a.key) || res.text.includes(b.key), "a list never shows a key string").toBe(false);
    });

    it("an API without keys -> an empty list and hasMore false", async () => {
      const apiId = await createApi(h);
      const res = await h.post(path, { apiId }, await admin(h));
      expect(listRows(path, res)).toEqual([]);
      expect(res.body.pagination).toEqual({ hasMore: false });
    });

    it("shows credits, rate limits, identity, meta, permissions and expiry", async () => {
      const apiId = await createApi(h);
      const externalId = uid("user");
      const expires = Date.now() + 3_600_000;
      const { keyId } = await createKey(h, apiId, {
        meta: { plan: "pro" },
        expires,
        externalId,
        permissions: ["documents.read", "documents.write"],
        credits: { remaining: 7, refill: { interval: "daily", amount: 10 } },
        ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }],
      });
      const [row] = listRows(path, await h.post(path, { apiId }, await admin(h)));
      expect(row).toMatchObject({
        keyId,
        meta: { plan: "pro" },
        expires,
        credits: { remaining: 7, refill: { interval: "daily", amount: 10 } },
        identity: { id: expect.any(String), externalId },
        ratelimits: [{ id: expect.any(String), name: "requests", limit: 10, duration: 60_000, autoApply: true }],
      });
      expect([...row.permissions].sort()).toEqual(["documents.read", "documents.write"]);
    });

    it("pages with limit and cursor: every key once, in order, cursor only while hasMore", async () => {
      const apiId = await createApi(h);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await createKey(h, apiId)).keyId);
      const rk = await admin(h);
      const seen: string[] = [];
      const pages: number[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const res = await h.post(path, { apiId, limit: 2, ...(cursor === undefined ? {} : { cursor }) }, rk);
        const rows = listRows(path, res);
        pages.push(rows.length);
        seen.push(...rows.map((k) => k.keyId as string));
        if (!res.body.pagination.hasMore) {
          expect(res.body.pagination).toEqual({ hasMore: false });
          break;
        }
        expect(res.body.pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
        cursor = res.body.pagination.cursor;
      }
      expect(pages).toEqual([2, 2, 1]);
      expect(seen).toEqual([...ids].sort());
    });

    it("limit 1 and limit 100 are accepted", async () => {
      const apiId = await createApi(h);
      await createKey(h, apiId);
      await createKey(h, apiId);
      const one = await h.post(path, { apiId, limit: 1 }, await admin(h));
      expect(listRows(path, one)).toHaveLength(1);
      expect(one.body.pagination.hasMore).toBe(true);
      const hundred = await h.post(path, { apiId, limit: 100 }, await admin(h));
      expect(listRows(path, hundred)).toHaveLength(2);
    });

    it("does not list deleted keys, nor keys of other APIs", async () => {
      const rk = await admin(h);
      const apiId = await createApi(h);
      const keep = await createKey(h, apiId);
      const soft = await createKey(h, apiId);
      const hard = await createKey(h, apiId);
      await createKey(h, await createApi(h));
      expectOk(await h.post("/v2/keys.deleteKey", { keyId: soft.keyId }, rk));
      expectOk(await h.post("/v2/keys.deleteKey", { keyId: hard.keyId, permanent: true }, rk));
      expect(listRows(path, await h.post(path, { apiId }, rk)).map((k) => k.keyId)).toEqual([keep.keyId]);
    });

    it("externalId lists only that identity's keys; an unknown externalId gives an empty page", async () => {
      const rk = await admin(h);
      const apiId = await createApi(h);
      const externalId = uid("owner");
      const mine = await createKey(h, apiId, { externalId });
      await createKey(h, apiId, { externalId: uid("someone_else") });
      await createKey(h, apiId);
      expect(listRows(path, await h.post(path, { apiId, externalId }, rk)).map((k) => k.keyId)).toEqual([mine.keyId]);
      const none = await h.post(path, { apiId, externalId: uid("nobody") }, rk);
      expect(listRows(path, none)).toEqual([]);
    });

    it("decrypt:true adds plaintext for recoverable keys only", async () => {
      const rk = await admin(h);
      const apiId = await createApi(h);
      const rec = await createKey(h, apiId, { recoverable: true });
      const plain = await createKey(h, apiId);
      const rows = listRows(path, await h.post(path, { apiId, decrypt: true }, rk));
      const byId = new Map(rows.map((k) => [k.keyId, k]));
      expect(byId.get(rec.keyId)?.plaintext).toBe(rec.key);
      expect(byId.get(plain.keyId)?.plaintext).toBeUndefined();
      const without = listRows(path, await h.post(path, { apiId }, rk));
      expect(without.every((k) => k.plaintext === undefined)).toBe(true);
    });

    it("per-API grants read_key and read_api are enough", async () => {
      const apiId = await createApi(h);
      const { keyId } = await createKey(h, apiId);
      const rk = await h.rootKey([`apis.${apiId}.read_key`, `apis.${apiId}.read_api`]);
      expect(listRows(path, await h.post(path, { apiId }, rk)).map((k) => k.keyId)).toEqual([keyId]);
    });
  });
}

export function describeListKeys400(h: Harness, path: ListPath): void {
  describe(`${path} 400`, () => {
    it.each<[string, Record<string, unknown>, string]>([
      ["apiId missing", { apiId: undefined }, "apiId"],
      ["apiId empty", { apiId: "" }, "apiId"],
      ["apiId not a string", { apiId: 42 }, "apiId"],
      ["limit 0", { limit: 0 }, "limit"],
      ["limit 101", { limit: 101 }, "limit"],
      ["limit as a string", { limit: "10" }, "limit"],
      ["limit not an integer", { limit: 1.5 }, "limit"],
      ["externalId empty", { externalId: "" }, "externalId"],
      ["decrypt as a string", { decrypt: "yes" }, "decrypt"],
      ["an unknown field", { page: 2 }, "page"],
    ])("%s -> 400 naming the field", async (_label, fields, field) => {
      const apiId = await createApi(h);
      const body = JSON.parse(JSON.stringify({ apiId, ...fields }));
      expectInvalid(h, await h.post(path, body, await admin(h)), field);
    });
  });
}

export function describeListKeys403(h: Harness, path: ListPath): void {
  describe(`${path} 403`, () => {
    it.each([
      ["read_api only", (_id: string) => ["apis.*.read_api"]],
      ["read_key only", (_id: string) => ["apis.*.read_key"]],
      ["both grants, for another API", (_id: string) => ["apis.api_other.read_key", "apis.api_other.read_api"]],
      ["unrelated grants", (_id: string) => ["apis.*.create_key", "apis.*.verify_key"]],
    ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
      const apiId = await createApi(h);
      await createKey(h, apiId);
      const rk = await h.rootKey(perms(apiId));
      expectError(h, await h.post(path, { apiId }, rk), 403, "err:svc:authorization:insufficient_permissions");
    });

    it("decrypt:true without decrypt_key -> 403", async () => {
      const apiId = await createApi(h);
      await createKey(h, apiId, { recoverable: true });
      const rk = await h.rootKey(["apis.*.read_key", "apis.*.read_api"]);
      expectError(h, await h.post(path, { apiId, decrypt: true }, rk), 403, "err:svc:authorization:insufficient_permissions");
    });
  });
}

export function describeListKeys404(h: Harness, path: ListPath): void {
  describe(`${path} 404`, () => {
    it("an unknown API -> 404 api_not_found", async () => {
      expectError(h, await h.post(path, { apiId: "api_doesnotexist0000" }, await admin(h)), 404, "err:svc:data:api_not_found");
    });

    it("a deleted API -> 404 api_not_found", async () => {
      const rk = await admin(h);
      const apiId = await createApi(h);
      await createKey(h, apiId);
      expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
      expectError(h, await h.post(path, { apiId }, rk), 404, "err:svc:data:api_not_found");
    });

    // Another workspace's API reads as missing: its keys cannot be listed and its id cannot be confirmed.
    it("another workspace's API -> 404 api_not_found", async () => {
      const apiId = await createApi(h);
      await createKey(h, apiId);
      expectError(h, await h.post(path, { apiId }, await foreignAdmin(h)), 404, "err:svc:data:api_not_found");
    });
  });
}
