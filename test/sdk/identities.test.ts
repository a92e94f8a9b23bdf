// @unkey/api against keyhold: the `identities` group.
import type { Unkey } from "@unkey/api";
import { ConflictErrorResponse, ForbiddenErrorResponse, NotFoundErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { expectBadRequest, expectSdkError, expectUntypedError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api identities.*", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;

  beforeAll(async () => {
    admin = await w.admin();
  });

  const newIdentity = async (externalId = uid("ext")) => ({ externalId, id: (await admin.identities.createIdentity({ externalId })).data.identityId });

  async function expectAuthFailures(call: (c: Unkey) => Promise<unknown>): Promise<void> {
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  }

  const limit = { name: "requests", limit: 10, duration: 60_000, autoApply: true };

  describe("createIdentity", () => {
    it("200: an identityId; meta and limits are stored", async () => {
      const externalId = uid("user");
      const res = await ok(
        (await w.client(["identity.*.create_identity"])).identities.createIdentity({ externalId, meta: { plan: "team" }, ratelimits: [limit] }),
      );
      expect(res.data.identityId).toMatch(/^id_/);
      expect((await admin.identities.getIdentity({ identity: res.data.identityId })).data).toEqual({
        id: res.data.identityId,
        externalId,
        meta: { plan: "team" },
        ratelimits: [{ id: expect.stringMatching(/^rl_/), ...limit }],
      });
    });

    it("400: an externalId outside the pattern names `externalId`; a 2-character limit name names `ratelimits[0].name`", async () => {
      await expectBadRequest(h, admin.identities.createIdentity({ externalId: "has space" }), "externalId");
      await expectBadRequest(h, admin.identities.createIdentity({ externalId: uid("x"), ratelimits: [{ ...limit, name: "ab" }] }), "ratelimits[0].name");
    });

    it("401 and 403", async () => {
      await expectAuthFailures((c) => c.identities.createIdentity({ externalId: uid("x") }));
    });

    it("409: a live identity already has the externalId (ConflictErrorResponse)", async () => {
      const { externalId } = await newIdentity();
      await expectSdkError(h, admin.identities.createIdentity({ externalId }), ConflictErrorResponse, 409, "err:svc:data:identity_already_exists");
    });
  });

  describe("getIdentity", () => {
    it("200: by id and by externalId; empty meta and limits are omitted", async () => {
      const { id, externalId } = await newIdentity();
      const c = await w.client([`identity.${id}.read_identity`]);
      expect((await ok(c.identities.getIdentity({ identity: id }))).data).toEqual({ id, externalId });
      expect((await ok(c.identities.getIdentity({ identity: externalId }))).data).toEqual({ id, externalId });
    });

    it("400: an empty identity names `identity`", async () => {
      await expectBadRequest(h, admin.identities.getIdentity({ identity: "" }), "identity");
    });

    it("401 and 403", async () => {
      const { id } = await newIdentity();
      await expectAuthFailures((c) => c.identities.getIdentity({ identity: id }));
    });

    it("404: unknown identity", async () => {
      await expectSdkError(h, admin.identities.getIdentity({ identity: uid("nobody") }), NotFoundErrorResponse, 404, "err:svc:data:identity_not_found");
    });
  });

  describe("listIdentities", () => {
    it("200: pages through every identity with the SDK's iterator; search filters", async () => {
      const tag = uid("list");
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await newIdentity(`${tag}_${i}`));
      const c = await w.client(["identity.*.read_identity"]);
      const first = await ok(c.identities.listIdentities({ limit: 2, search: tag }));
      expect(first.result.data).toHaveLength(2);
      expect(first.result.pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
      const seen = [];
      for await (const page of first) seen.push(...page.result.data);
      expect(seen.sort((a, b) => a.id.localeCompare(b.id))).toEqual(made.sort((a, b) => a.id.localeCompare(b.id)));
    });

    it("400: limit 101 names `limit`", async () => {
      await expectBadRequest(h, admin.identities.listIdentities({ limit: 101 }), "limit");
    });

    it("401 and 403 (a per-identity read grant does not cover the list)", async () => {
      await expectAuthFailures((c) => c.identities.listIdentities({}));
      const { id } = await newIdentity();
      await expectSdkError(
        h,
        (await w.client([`identity.${id}.read_identity`])).identities.listIdentities({}),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });
  });

  describe("updateIdentity", () => {
    it("200: the identity after the update (stored meta, limits replaced by name)", async () => {
      const externalId = uid("upd");
      const id = (await admin.identities.createIdentity({ externalId, meta: { a: 1 }, ratelimits: [limit, { ...limit, name: "other" }] })).data.identityId;
      const before = (await admin.identities.getIdentity({ identity: id })).data.ratelimits ?? [];
      const c = await w.client(["identity.*.update_identity"]);
      const res = await ok(
        c.identities.updateIdentity({
          identity: externalId,
          meta: { b: 2 },
          ratelimits: [
            { ...limit, limit: 20 },
            { name: "added", limit: 1, duration: 1_000, autoApply: false },
          ],
        }),
      );
      expect(res.data).toEqual({
        id,
        externalId,
        meta: { b: 2 },
        ratelimits: expect.arrayContaining([
          { id: before.find((r) => r.name === "requests")?.id, name: "requests", limit: 20, duration: 60_000, autoApply: true },
          { id: expect.stringMatching(/^rl_/), name: "added", limit: 1, duration: 1_000, autoApply: false },
        ]),
      });
      expect(res.data.ratelimits).toHaveLength(2);
      // Without meta in the request the stored meta is returned (not the request's).
      expect((await ok(c.identities.updateIdentity({ identity: id, ratelimits: [] }))).data).toEqual({ id, externalId, meta: { b: 2 } });
    });

    it("400: a limit with duration under 1000 names `ratelimits[0].duration`", async () => {
      const { id } = await newIdentity();
      await expectBadRequest(h, admin.identities.updateIdentity({ identity: id, ratelimits: [{ ...limit, duration: 10 }] }), "ratelimits[0].duration");
    });

    it("401 and 403", async () => {
      const { id } = await newIdentity();
      await expectAuthFailures((c) => c.identities.updateIdentity({ identity: id, meta: {} }));
    });

    it("404: unknown identity", async () => {
      await expectSdkError(
        h,
        admin.identities.updateIdentity({ identity: uid("nobody"), meta: {} }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:identity_not_found",
      );
    });
  });

  describe("deleteIdentity", () => {
    it("200: the identity is gone and its externalId is free again", async () => {
      const { id, externalId } = await newIdentity();
      const res = await ok((await w.client(["identity.*.delete_identity"])).identities.deleteIdentity({ identity: id }));
      expect(res.meta.requestId).toMatch(/^req_/);
      await expectSdkError(h, admin.identities.getIdentity({ identity: id }), NotFoundErrorResponse, 404, "err:svc:data:identity_not_found");
      expect((await ok(admin.identities.createIdentity({ externalId }))).data.identityId).not.toBe(id);
    });

    // The SDK's deleteIdentity (alone among its operations) parses typed errors only
    // from `Content-Type: application/problem+json`, although it sends
    // `Accept: application/json`. keyhold answers application/json, as Unkey itself
    // does for that Accept (docs/errors.md, "The JSON envelope"), so the SDK reports these as the
    // generic APIError; status and envelope are still all there.
    it("400: an empty identity, surfaced by the SDK as APIError (it wants problem+json here)", async () => {
      const err = await expectUntypedError(h, admin.identities.deleteIdentity({ identity: "" }), 400, "err:svc:application:invalid_input");
      expect(JSON.parse(err.body).error.errors).toEqual([expect.objectContaining({ location: "body.identity" })]);
    });

    it("401 and 403, surfaced as APIError", async () => {
      const { id } = await newIdentity();
      await expectUntypedError(h, w.unknownKey().identities.deleteIdentity({ identity: id }), 401, "err:svc:authentication:key_not_found");
      await expectUntypedError(h, w.truncatedKey().identities.deleteIdentity({ identity: id }), 401, "err:svc:authentication:malformed");
      await expectUntypedError(h, (await w.client(NOTHING)).identities.deleteIdentity({ identity: id }), 403, "err:svc:authorization:insufficient_permissions");
    });

    it("404: a second delete, surfaced as APIError", async () => {
      const { id } = await newIdentity();
      await admin.identities.deleteIdentity({ identity: id });
      await expectUntypedError(h, admin.identities.deleteIdentity({ identity: id }), 404, "err:svc:data:identity_not_found");
    });
  });
});
