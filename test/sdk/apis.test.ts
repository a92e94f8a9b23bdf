// @unkey/api against keyhold: the `apis` group (createApi, getApi, listKeys, deleteApi).

import type { Unkey } from "@unkey/api";
import { ForbiddenErrorResponse, NotFoundErrorResponse, PreconditionFailedErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { describe, expect, it } from "vitest";
import { expectBadRequest, expectSdkError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api apis.*", () => {
  const w = useSdk();
  const { h } = w;

  const newApi = async (name = uid("api")): Promise<string> => (await (await w.admin()).apis.createApi({ name })).data.apiId;

  /** The three authentication failures, for any call. */
  async function expectAuthFailures(call: (c: Unkey) => Promise<unknown>): Promise<void> {
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  }

  describe("createApi", () => {
    it("200: returns an apiId that getApi reads back with the name", async () => {
      const c = await w.client(["apis.*.create_api"]);
      const name = uid("payments");
      const res = await ok(c.apis.createApi({ name }));
      expect(res.meta.requestId).toMatch(/^req_/);
      expect(res.data.apiId).toMatch(/^api_[a-zA-Z0-9_]+$/);
      const got = await ok((await w.client([`apis.${res.data.apiId}.read_api`])).apis.getApi({ apiId: res.data.apiId }));
      expect(got.data).toEqual({ id: res.data.apiId, name });
    });

    it("400: a name shorter than 3 characters names `name`", async () => {
      await expectBadRequest(h, (await w.admin()).apis.createApi({ name: "ab" }), "name");
    });

    it("401 and 403", async () => {
      await expectAuthFailures((c) => c.apis.createApi({ name: uid("api") }));
    });
  });

  describe("getApi", () => {
    it("200: {id, name} with a grant for that API only", async () => {
      const name = uid("orders");
      const apiId = await newApi(name);
      const res = await ok((await w.client([`apis.${apiId}.read_api`])).apis.getApi({ apiId }));
      expect(res.data).toEqual({ id: apiId, name });
    });

    it("400: an apiId with a character outside the pattern names `apiId`", async () => {
      await expectBadRequest(h, (await w.admin()).apis.getApi({ apiId: "api_bad-id!" }), "apiId");
    });

    it("401 and 403", async () => {
      const apiId = await newApi();
      await expectAuthFailures((c) => c.apis.getApi({ apiId }));
      // A grant for another API is not one for this API.
      const other = await newApi();
      await expectSdkError(
        h,
        (await w.client([`apis.${other}.read_api`])).apis.getApi({ apiId }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("404: an unknown apiId is NotFoundErrorResponse api_not_found", async () => {
      await expectSdkError(h, (await w.admin()).apis.getApi({ apiId: "api_doesnotexist1" }), NotFoundErrorResponse, 404, "err:svc:data:api_not_found");
    });
  });

  describe("listKeys", () => {
    it("200: the API's keys as KeyResponseData, paged with pagination.cursor through the SDK's iterator", async () => {
      const admin = await w.admin();
      const apiId = await newApi();
      const created: string[] = [];
      for (let i = 0; i < 3; i++) {
        created.push((await admin.keys.createKey({ apiId, name: `k${i}`, prefix: "lk", meta: { i } })).data.keyId);
      }
      const c = await w.client([`apis.${apiId}.read_key`, `apis.${apiId}.read_api`]);
      const first = await ok(c.apis.listKeys({ apiId, limit: 2 }));
      expect(first.result.data).toHaveLength(2);
      expect(first.result.pagination.hasMore).toBe(true);
      expect(first.result.pagination.cursor).toEqual(expect.any(String));
      const seen: string[] = [];
      for await (const page of first) {
        for (const k of page.result.data) {
          seen.push(k.keyId);
          expect(k).toEqual({
            keyId: k.keyId,
            start: expect.stringMatching(/^lk_.{4}$/),
            enabled: true,
            createdAt: expect.any(Number),
            name: `k${created.indexOf(k.keyId)}`,
            meta: { i: created.indexOf(k.keyId) },
          });
        }
      }
      expect(seen.sort()).toEqual([...created].sort());
      const last = await ok(c.apis.listKeys({ apiId, limit: 2, cursor: first.result.pagination.cursor as string }));
      expect(last.result.data).toHaveLength(1);
      expect(last.result.pagination).toEqual({ hasMore: false });
    });

    it("200: externalId filters to the identity's keys; decrypt returns plaintext of recoverable keys", async () => {
      const admin = await w.admin();
      const apiId = await newApi();
      const externalId = uid("owner");
      const mine = await admin.keys.createKey({ apiId, externalId, recoverable: true });
      await admin.keys.createKey({ apiId });
      const c = await w.client([`apis.${apiId}.read_key`, `apis.${apiId}.read_api`, `apis.${apiId}.decrypt_key`]);
      const res = await ok(c.apis.listKeys({ apiId, externalId, decrypt: true }));
      expect(res.result.data.map((k) => [k.keyId, k.plaintext, k.identity?.externalId])).toEqual([[mine.data.keyId, mine.data.key, externalId]]);
      expect(res.result.pagination).toEqual({ hasMore: false });
    });

    it("400: limit 0 names `limit`", async () => {
      await expectBadRequest(h, (await w.admin()).apis.listKeys({ apiId: await newApi(), limit: 0 }), "limit");
    });

    it("401 and 403 (read_api without read_key is not enough)", async () => {
      const apiId = await newApi();
      await expectAuthFailures((c) => c.apis.listKeys({ apiId }));
      await expectSdkError(
        h,
        (await w.client([`apis.${apiId}.read_api`])).apis.listKeys({ apiId }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("404: an unknown apiId", async () => {
      await expectSdkError(h, (await w.admin()).apis.listKeys({ apiId: "api_doesnotexist1" }), NotFoundErrorResponse, 404, "err:svc:data:api_not_found");
    });
  });

  describe("deleteApi", () => {
    it("200: {} and the API is gone afterwards", async () => {
      const apiId = await newApi();
      const res = await ok((await w.client([`apis.${apiId}.delete_api`])).apis.deleteApi({ apiId }));
      expect(res.data).toEqual({});
      await expectSdkError(h, (await w.admin()).apis.getApi({ apiId }), NotFoundErrorResponse, 404, "err:svc:data:api_not_found");
    });

    it("400: an apiId of 2 characters names `apiId`", async () => {
      await expectBadRequest(h, (await w.admin()).apis.deleteApi({ apiId: "ab" }), "apiId");
    });

    it("401 and 403", async () => {
      const apiId = await newApi();
      await expectAuthFailures((c) => c.apis.deleteApi({ apiId }));
    });

    // There is no API to set delete protection: it is set in the database, as in test/contract/apis.deleteApi/412.test.ts.
    it("412: a delete-protected API is PreconditionFailedErrorResponse protected_resource", async () => {
      const apiId = await newApi();
      await h.db.pool.execute("UPDATE apis SET delete_protection = TRUE WHERE id = ?", [apiId]);
      await expectSdkError(h, (await w.admin()).apis.deleteApi({ apiId }), PreconditionFailedErrorResponse, 412, "err:svc:application:protected_resource");
      expect((await ok((await w.admin()).apis.getApi({ apiId }))).data.id).toBe(apiId);
    });

    it("404: a second delete", async () => {
      const apiId = await newApi();
      await ok((await w.admin()).apis.deleteApi({ apiId }));
      await expectSdkError(h, (await w.admin()).apis.deleteApi({ apiId }), NotFoundErrorResponse, 404, "err:svc:data:api_not_found");
    });
  });
});
