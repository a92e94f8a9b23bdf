// @unkey/api against keyhold: the `keys` group's key operations (createKey,
// verifyKey, getKey, whoami, updateKey, updateCredits, deleteKey, rerollKey).
// The permission and role operations are in keys-rbac.test.ts.
import type { Unkey } from "@unkey/api";
import { BadRequestErrorResponse, ForbiddenErrorResponse, NotFoundErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { midMinute, withClock } from "../fixtures.js";
import { expectBadRequest, expectSdkError, expectUntypedError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api keys.* (key operations)", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;
  let apiId: string;

  beforeAll(async () => {
    admin = await w.admin();
    apiId = (await admin.apis.createApi({ name: uid("keys") })).data.apiId;
  });

  const newKey = async (fields: Partial<Parameters<Unkey["keys"]["createKey"]>[0]> = {}) => (await admin.keys.createKey({ apiId, ...fields })).data;

  async function expectAuthFailures(call: (c: Unkey) => Promise<unknown>, forbidden = true): Promise<void> {
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    if (forbidden) await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  }

  describe("createKey", () => {
    it("200: every field is stored and read back by getKey", async () => {
      const role = uid("reader");
      await admin.permissions.createRole({ name: role, permissions: ["reports.read"] });
      const externalId = uid("acme");
      const expires = Date.now() + 3_600_000;
      const c = await w.client([`apis.${apiId}.create_key`, `apis.${apiId}.encrypt_key`]);
      const res = await ok(
        c.keys.createKey({
          apiId,
          prefix: "sdk",
          name: "reader key",
          byteLength: 24,
          externalId,
          meta: { plan: "pro", seats: 3 },
          roles: [role],
          permissions: ["documents.read"],
          expires,
          credits: { remaining: 42, refill: { interval: "monthly", amount: 100, refillDay: 15 } },
          ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
          enabled: true,
          recoverable: true,
        }),
      );
      expect(res.meta.requestId).toMatch(/^req_/);
      expect(res.data.keyId).toMatch(/^key_/);
      // 24 random bytes in base58 are 32 or 33 characters.
      expect(res.data.key).toMatch(/^sdk_[1-9A-HJ-NP-Za-km-z]{32,33}$/);
      const got = await ok((await w.client([`apis.${apiId}.read_key`, `apis.${apiId}.decrypt_key`])).keys.getKey({ keyId: res.data.keyId, decrypt: true }));
      expect(got.data).toEqual({
        keyId: res.data.keyId,
        start: res.data.key.slice(0, 8),
        enabled: true,
        createdAt: expect.any(Number),
        name: "reader key",
        meta: { plan: "pro", seats: 3 },
        expires,
        permissions: expect.arrayContaining(["documents.read", "reports.read"]),
        roles: [role],
        credits: { remaining: 42, refill: { interval: "monthly", amount: 100, refillDay: 15 } },
        identity: { id: expect.stringMatching(/^id_/), externalId },
        ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "requests", limit: 10, duration: 60_000, autoApply: true }],
        plaintext: res.data.key,
      });
      expect(got.data.permissions).toHaveLength(2);
    });

    it("200: the SDK's defaults (byteLength 16, enabled, not recoverable) give a plain working key", async () => {
      const res = await ok((await w.client(["apis.*.create_key"])).keys.createKey({ apiId }));
      expect(res.data.key).toMatch(/^[1-9A-HJ-NP-Za-km-z]{21,22}$/);
      expect((await admin.keys.verifyKey({ key: res.data.key })).data).toEqual({ valid: true, code: "VALID", keyId: res.data.keyId, enabled: true });
    });

    it("400: a prefix outside the pattern names `prefix`; refill without remaining names `credits.remaining`", async () => {
      await expectBadRequest(h, admin.keys.createKey({ apiId, prefix: "bad-prefix" }), "prefix");
      await expectBadRequest(h, admin.keys.createKey({ apiId, byteLength: 8 }), "byteLength");
      await expectBadRequest(h, admin.keys.createKey({ apiId, credits: { remaining: null, refill: { interval: "daily", amount: 5 } } }), "credits.remaining");
    });

    it("401 and 403", async () => {
      await expectAuthFailures((c) => c.keys.createKey({ apiId }));
      // create_key without encrypt_key may not make a recoverable key.
      await expectSdkError(
        h,
        (await w.client(["apis.*.create_key"])).keys.createKey({ apiId, recoverable: true }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("404: an unknown apiId (api_not_found) and an unknown role (role_not_found)", async () => {
      await expectSdkError(h, admin.keys.createKey({ apiId: "api_doesnotexist1" }), NotFoundErrorResponse, 404, "err:svc:data:api_not_found");
      await expectSdkError(h, admin.keys.createKey({ apiId, roles: [uid("norole")] }), NotFoundErrorResponse, 404, "err:svc:data:role_not_found");
    });
  });

  describe("verifyKey", () => {
    it("200 VALID: the key's fields, credits after the spend, the limits checked", async () => {
      const role = uid("editor");
      await admin.permissions.createRole({ name: role, permissions: ["docs.write"] });
      const externalId = uid("user");
      await admin.identities.createIdentity({
        externalId,
        meta: { tier: "gold" },
        ratelimits: [{ name: "shared", limit: 100, duration: 60_000, autoApply: true }],
      });
      const expires = Date.now() + 3_600_000;
      const { key, keyId } = await newKey({
        name: "verifier",
        meta: { a: 1 },
        expires,
        externalId,
        roles: [role],
        permissions: ["docs.read"],
        credits: { remaining: 10 },
        ratelimits: [{ name: "per_key", limit: 5, duration: 60_000, autoApply: true }],
      });
      const c = await w.client([`apis.${apiId}.verify_key`]);
      const res = await ok(c.keys.verifyKey({ key, permissions: "docs.read AND docs.write", credits: { cost: 3 }, tags: ["path=/x"] }));
      expect(res.data).toEqual({
        valid: true,
        code: "VALID",
        keyId,
        name: "verifier",
        meta: { a: 1 },
        expires,
        credits: 7,
        enabled: true,
        permissions: expect.arrayContaining(["docs.read", "docs.write"]),
        roles: [role],
        identity: {
          id: expect.stringMatching(/^id_/),
          externalId,
          meta: { tier: "gold" },
          ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "shared", limit: 100, duration: 60_000, autoApply: true }],
        },
        ratelimits: expect.arrayContaining([
          {
            id: expect.stringMatching(/^rl_/),
            name: "per_key",
            limit: 5,
            duration: 60_000,
            reset: expect.any(Number),
            remaining: 4,
            exceeded: false,
            autoApply: true,
          },
          {
            id: expect.stringMatching(/^rl_/),
            name: "shared",
            limit: 100,
            duration: 60_000,
            reset: expect.any(Number),
            remaining: 99,
            exceeded: false,
            autoApply: true,
          },
        ]),
      });
      expect(res.data.ratelimits).toHaveLength(2);
      expect(res.data.permissions).toHaveLength(2);
    });

    // The clock is fixed mid-minute so that the two verifications of the rate-limited key share one window.
    it("200 with valid:false: NOT_FOUND, DISABLED, EXPIRED, INSUFFICIENT_PERMISSIONS, USAGE_EXCEEDED, RATE_LIMITED", () =>
      withClock(h, midMinute(), async () => {
        const c = await w.client([`apis.${apiId}.verify_key`]);
        expect((await ok(c.keys.verifyKey({ key: "sk_doesnotexist123456" }))).data).toEqual({ valid: false, code: "NOT_FOUND" });
        const disabled = await newKey({ enabled: false });
        expect((await ok(c.keys.verifyKey({ key: disabled.key }))).data).toMatchObject({
          valid: false,
          code: "DISABLED",
          keyId: disabled.keyId,
          enabled: false,
        });
        const expired = await newKey({ expires: h.deps.clock.now() - 1000 });
        expect((await ok(c.keys.verifyKey({ key: expired.key }))).data).toMatchObject({ valid: false, code: "EXPIRED", keyId: expired.keyId });
        const plain = await newKey({ permissions: ["a.read"] });
        expect((await ok(c.keys.verifyKey({ key: plain.key, permissions: "a.write" }))).data).toMatchObject({
          valid: false,
          code: "INSUFFICIENT_PERMISSIONS",
          keyId: plain.keyId,
        });
        const empty = await newKey({ credits: { remaining: 0 } });
        expect((await ok(c.keys.verifyKey({ key: empty.key }))).data).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
        const limited = await newKey({ ratelimits: [{ name: "tight", limit: 1, duration: 60_000, autoApply: true }] });
        expect((await ok(c.keys.verifyKey({ key: limited.key }))).data.valid).toBe(true);
        const denied = await ok(c.keys.verifyKey({ key: limited.key }));
        expect(denied.data).toMatchObject({ valid: false, code: "RATE_LIMITED" });
        expect(denied.data.ratelimits).toEqual([
          { id: expect.any(String), name: "tight", limit: 1, duration: 60_000, reset: expect.any(Number), remaining: 0, exceeded: true, autoApply: true },
        ]);
        // A root key with verify_key for another API only reads as NOT_FOUND (no existence leak).
        const other = (await admin.apis.createApi({ name: uid("other") })).data.apiId;
        expect((await ok((await w.client([`apis.${other}.verify_key`])).keys.verifyKey({ key: plain.key }))).data).toEqual({ valid: false, code: "NOT_FOUND" });
      }));

    it('200: named limits with a cost, and an inline limit (id "", autoApply false)', async () => {
      const { key } = await newKey({ ratelimits: [{ name: "manual", limit: 10, duration: 60_000, autoApply: false }] });
      const res = await ok(
        admin.keys.verifyKey({
          key,
          ratelimits: [
            { name: "manual", cost: 4 },
            { name: "inline", limit: 3, duration: 10_000 },
          ],
        }),
      );
      expect(res.data.valid).toBe(true);
      expect(res.data.ratelimits).toEqual(
        expect.arrayContaining([
          {
            id: expect.stringMatching(/^rl_/),
            name: "manual",
            limit: 10,
            duration: 60_000,
            reset: expect.any(Number),
            remaining: 6,
            exceeded: false,
            autoApply: false,
          },
          { id: "", name: "inline", limit: 3, duration: 10_000, reset: expect.any(Number), remaining: 2, exceeded: false, autoApply: false },
        ]),
      );
    });

    it("400: an empty key names `key`; a broken permissions query is permissions_query_syntax_error", async () => {
      await expectBadRequest(h, admin.keys.verifyKey({ key: "" }), "key");
      const { key } = await newKey();
      const err = await expectSdkError(
        h,
        admin.keys.verifyKey({ key, permissions: "a AND" }),
        BadRequestErrorResponse,
        400,
        "err:user:bad_request:permissions_query_syntax_error",
      );
      expect(err.error.errors).toEqual(expect.any(Array));
    });

    it("401 and 403 (a root key without any verify_key grant)", async () => {
      const { key } = await newKey();
      await expectAuthFailures((c) => c.keys.verifyKey({ key }));
    });

    it("412 for a named limit the key does not have: the SDK has no typed class for 412 here (APIError)", async () => {
      const { key } = await newKey();
      await expectUntypedError(h, admin.keys.verifyKey({ key, ratelimits: [{ name: "nosuchlimit" }] }), 412, "err:svc:application:precondition_failed");
    });
  });

  describe("getKey", () => {
    it("200: a plain key has only keyId, start, enabled, createdAt (nothing null)", async () => {
      const { keyId, key } = await newKey();
      const res = await ok((await w.client([`apis.${apiId}.read_key`])).keys.getKey({ keyId }));
      expect(res.data).toEqual({ keyId, start: key.slice(0, 4), enabled: true, createdAt: expect.any(Number) });
      expect(Math.abs(res.data.createdAt - Date.now())).toBeLessThan(3_600_000);
    });

    it("200: decrypt on a recoverable key gives the plaintext", async () => {
      const { keyId, key } = await newKey({ recoverable: true });
      const res = await ok((await w.client([`apis.${apiId}.read_key`, `apis.${apiId}.decrypt_key`])).keys.getKey({ keyId, decrypt: true }));
      expect(res.data).toEqual({ keyId, start: key.slice(0, 4), enabled: true, createdAt: expect.any(Number), plaintext: key });
    });

    it("400: a keyId of 2 characters names `keyId`", async () => {
      await expectBadRequest(h, admin.keys.getKey({ keyId: "ab" }), "keyId");
    });

    it("401 and 403 (decrypt without decrypt_key)", async () => {
      const { keyId } = await newKey({ recoverable: true });
      await expectAuthFailures((c) => c.keys.getKey({ keyId }));
      await expectSdkError(
        h,
        (await w.client([`apis.${apiId}.read_key`])).keys.getKey({ keyId, decrypt: true }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("404: an unknown keyId", async () => {
      await expectSdkError(h, admin.keys.getKey({ keyId: "key_doesnotexist1" }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
    });
  });

  describe("whoami", () => {
    it("200: the key's data by the key string", async () => {
      const { keyId, key } = await newKey({ name: "me", meta: { x: true }, credits: { remaining: 5, refill: { interval: "daily", amount: 5 } } });
      const res = await ok((await w.client([`apis.${apiId}.read_key`])).keys.whoami({ key }));
      expect(res.data).toEqual({
        keyId,
        start: key.slice(0, 4),
        enabled: true,
        createdAt: expect.any(Number),
        name: "me",
        meta: { x: true },
        credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
      });
    });

    it("400: an empty key names `key`", async () => {
      await expectBadRequest(h, admin.keys.whoami({ key: "" }), "key");
    });

    it("401; a root key without read_key gets 404 key_not_found (masked on purpose, decision 6)", async () => {
      const { key } = await newKey();
      await expectAuthFailures((c) => c.keys.whoami({ key }), false);
      await expectSdkError(h, (await w.client(NOTHING)).keys.whoami({ key }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
    });

    it("404: an unknown key", async () => {
      await expectSdkError(h, admin.keys.whoami({ key: "sk_nosuchkey1234567890" }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
    });
  });

  describe("updateKey", () => {
    it("200: {} and the changes are visible to getKey; null clears", async () => {
      const role = uid("admin");
      await admin.permissions.createRole({ name: role });
      const { keyId } = await newKey({ name: "old", meta: { v: 1 }, expires: Date.now() + 60_000, credits: { remaining: 3 } });
      const c = await w.client([`apis.${apiId}.update_key`]);
      const externalId = uid("owner");
      const res = await ok(
        c.keys.updateKey({
          keyId,
          name: "new",
          meta: { v: 2 },
          expires: null,
          externalId,
          credits: { remaining: 50, refill: { interval: "daily", amount: 50 } },
          ratelimits: [{ name: "burst", limit: 2, duration: 1_000, autoApply: true }],
          enabled: false,
          roles: [role],
          permissions: ["x.y"],
        }),
      );
      expect(res.data).toEqual({});
      const got = (await admin.keys.getKey({ keyId })).data;
      expect(got).toEqual({
        keyId,
        start: expect.any(String),
        enabled: false,
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number),
        name: "new",
        meta: { v: 2 },
        permissions: ["x.y"],
        roles: [role],
        credits: { remaining: 50, refill: { interval: "daily", amount: 50 } },
        identity: { id: expect.stringMatching(/^id_/), externalId },
        ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "burst", limit: 2, duration: 1_000, autoApply: true }],
      });
      await ok(c.keys.updateKey({ keyId, name: null, meta: null, externalId: null, credits: null, enabled: true, roles: [], permissions: [], ratelimits: [] }));
      expect((await admin.keys.getKey({ keyId })).data).toEqual({
        keyId,
        start: expect.any(String),
        enabled: true,
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number),
      });
    });

    it("200: a monthly refill without refillDay refills on day 1 (contract decision 7)", async () => {
      const { keyId } = await newKey();
      await ok(admin.keys.updateKey({ keyId, credits: { remaining: 1, refill: { interval: "monthly", amount: 5 } } }));
      expect((await admin.keys.getKey({ keyId })).data.credits).toEqual({ remaining: 1, refill: { interval: "monthly", amount: 5, refillDay: 1 } });
    });

    it("400: a daily refill with a refillDay names `credits.refill.refillDay`; a bad externalId names `externalId`", async () => {
      const { keyId } = await newKey();
      await expectBadRequest(
        h,
        admin.keys.updateKey({ keyId, credits: { remaining: 1, refill: { interval: "daily", amount: 5, refillDay: 3 } } }),
        "credits.refill.refillDay",
      );
      await expectBadRequest(h, admin.keys.updateKey({ keyId, externalId: "no spaces" }), "externalId");
    });

    it("401 and 403", async () => {
      const { keyId } = await newKey();
      await expectAuthFailures((c) => c.keys.updateKey({ keyId, name: "x" }));
    });

    it("404: unknown keyId (key_not_found) and unknown role (role_not_found)", async () => {
      await expectSdkError(h, admin.keys.updateKey({ keyId: "key_doesnotexist1", name: "x" }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
      const { keyId } = await newKey();
      await expectSdkError(h, admin.keys.updateKey({ keyId, roles: [uid("norole")] }), NotFoundErrorResponse, 404, "err:svc:data:role_not_found");
    });
  });

  describe("updateCredits", () => {
    it("200: set, increment, decrement (floored at 0) and set null (unlimited) return KeyCreditsData", async () => {
      const { keyId } = await newKey({ credits: { remaining: 10, refill: { interval: "monthly", amount: 20, refillDay: 3 } } });
      const c = await w.client([`apis.${apiId}.update_key`]);
      expect((await ok(c.keys.updateCredits({ keyId, operation: "set", value: 7 }))).data).toEqual({
        remaining: 7,
        refill: { interval: "monthly", amount: 20, refillDay: 3 },
      });
      expect((await ok(c.keys.updateCredits({ keyId, operation: "increment", value: 5 }))).data.remaining).toBe(12);
      expect((await ok(c.keys.updateCredits({ keyId, operation: "decrement", value: 100 }))).data.remaining).toBe(0);
      expect((await ok(c.keys.updateCredits({ keyId, operation: "set", value: null }))).data).toEqual({ remaining: null });
      expect((await admin.keys.getKey({ keyId })).data.credits).toBeUndefined();
    });

    it("400: increment without a value names `value`", async () => {
      const { keyId } = await newKey({ credits: { remaining: 1 } });
      await expectBadRequest(h, admin.keys.updateCredits({ keyId, operation: "increment" }), "value");
    });

    it("401 and 403", async () => {
      const { keyId } = await newKey({ credits: { remaining: 1 } });
      await expectAuthFailures((c) => c.keys.updateCredits({ keyId, operation: "set", value: 2 }));
    });

    it("404: an unknown keyId", async () => {
      await expectSdkError(
        h,
        admin.keys.updateCredits({ keyId: "key_doesnotexist1", operation: "set", value: 1 }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:key_not_found",
      );
    });
  });

  describe("deleteKey", () => {
    it("200: {} and the key then verifies as NOT_FOUND (soft and permanent)", async () => {
      const c = await w.client([`apis.${apiId}.delete_key`]);
      for (const permanent of [false, true]) {
        const { keyId, key } = await newKey();
        expect((await ok(c.keys.deleteKey({ keyId, permanent }))).data).toEqual({});
        expect((await admin.keys.verifyKey({ key })).data).toEqual({ valid: false, code: "NOT_FOUND" });
      }
    });

    it("400: a keyId outside the pattern names `keyId`", async () => {
      await expectBadRequest(h, admin.keys.deleteKey({ keyId: "key-with-dash" }), "keyId");
    });

    it("401 and 403", async () => {
      const { keyId } = await newKey();
      await expectAuthFailures((c) => c.keys.deleteKey({ keyId }));
    });

    it("404: a second delete", async () => {
      const { keyId } = await newKey();
      await admin.keys.deleteKey({ keyId });
      await expectSdkError(h, admin.keys.deleteKey({ keyId }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
    });
  });

  describe("rerollKey", () => {
    it("200: a new key with the old one's settings; the old key keeps working until `expiration`", async () => {
      const { keyId, key } = await newKey({ prefix: "rr", name: "rolling", meta: { m: 1 }, credits: { remaining: 9 } });
      const c = await w.client([`apis.${apiId}.create_key`]);
      const res = await ok(c.keys.rerollKey({ keyId, expiration: 3_600_000 }));
      expect(res.data.keyId).toMatch(/^key_/);
      expect(res.data.keyId).not.toBe(keyId);
      expect(res.data.key).toMatch(/^rr_/);
      expect(res.data.key).not.toBe(key);
      const fresh = (await admin.keys.verifyKey({ key: res.data.key })).data;
      expect(fresh).toMatchObject({ valid: true, keyId: res.data.keyId, name: "rolling", meta: { m: 1 }, credits: 8 });
      const old = (await admin.keys.verifyKey({ key })).data;
      expect(old).toMatchObject({ valid: true, keyId });
      expect(old.expires).toBeGreaterThan(Date.now());
    });

    it("400: a negative expiration names `expiration`", async () => {
      const { keyId } = await newKey();
      await expectBadRequest(h, admin.keys.rerollKey({ keyId, expiration: -1 }), "expiration");
    });

    it("401 and 403", async () => {
      const { keyId } = await newKey();
      await expectAuthFailures((c) => c.keys.rerollKey({ keyId, expiration: 0 }));
    });

    it("404: an unknown keyId", async () => {
      await expectSdkError(h, admin.keys.rerollKey({ keyId: "key_doesnotexist1", expiration: 0 }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
    });
  });
});
