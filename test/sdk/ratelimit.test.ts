// @unkey/api against keyhold: the `ratelimit` group.
import type { Unkey } from "@unkey/api";
import { ForbiddenErrorResponse, GoneErrorResponse, NotFoundErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { midMinute, withClock } from "../fixtures.js";
import { expectBadRequest, expectSdkError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api ratelimit.*", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;

  beforeAll(async () => {
    admin = await w.admin();
  });

  /** A namespace made by its first limit call; returns its name and id. */
  async function namespace(): Promise<{ name: string; id: string }> {
    const name = uid("ns");
    await admin.ratelimit.limit({ namespace: name, identifier: "seed", limit: 1, duration: 1_000 });
    const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
    return { name, id: String((rows as Array<{ id: string }>)[0]?.id) };
  }

  async function softDelete(name: string): Promise<void> {
    await h.db.pool.execute("UPDATE ratelimit_namespaces SET deleted_at_m = ? WHERE name = ?", [Date.now(), name]);
  }

  async function expectAuthFailures(call: (c: Unkey) => Promise<unknown>, forbidden = true): Promise<void> {
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    if (forbidden) await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  }

  describe("limit", () => {
    // The clock is fixed mid-minute so that the sequence never straddles a window edge.
    it("200: counts down, then denies; a new namespace is created on first use", () =>
      withClock(h, midMinute(), async () => {
        const name = uid("api_calls");
        const c = await w.client(["ratelimit.*.limit", "ratelimit.*.create_namespace"]);
        const req = { namespace: name, identifier: "user_1", limit: 2, duration: 60_000 };
        const first = await ok(c.ratelimit.limit(req));
        expect(first.data).toEqual({ limit: 2, remaining: 1, reset: expect.any(Number), success: true });
        // reset is the end of the current minute window.
        expect(first.data.reset).toBe(Math.floor(h.deps.clock.now() / 60_000) * 60_000 + 60_000);
        expect((await ok(c.ratelimit.limit(req))).data).toMatchObject({ limit: 2, remaining: 0, success: true });
        expect((await ok(c.ratelimit.limit(req))).data).toMatchObject({ limit: 2, remaining: 0, success: false });
        // cost 0 checks without consuming.
        expect((await ok(c.ratelimit.limit({ ...req, identifier: "user_2", cost: 0 }))).data).toMatchObject({ remaining: 2, success: true });
      }));

    it("200: an override applies and is named by overrideId", async () => {
      const ns = await namespace();
      const { overrideId } = (await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "vip_*", limit: 100, duration: 60_000 })).data;
      const res = await ok(
        (await w.client([`ratelimit.${ns.id}.limit`])).ratelimit.limit({ namespace: ns.id, identifier: "vip_7", limit: 1, duration: 1_000 }),
      );
      expect(res.data).toEqual({ limit: 100, remaining: 99, reset: expect.any(Number), success: true, overrideId });
    });

    it("400: duration under 1000 names `duration`; an empty identifier names `identifier`", async () => {
      await expectBadRequest(h, admin.ratelimit.limit({ namespace: uid("ns"), identifier: "x", limit: 1, duration: 10 }), "duration");
      await expectBadRequest(h, admin.ratelimit.limit({ namespace: uid("ns"), identifier: "", limit: 1, duration: 1_000 }), "identifier");
    });

    it("401 and 403 (a new namespace needs create_namespace)", async () => {
      const ns = await namespace();
      await expectAuthFailures((c) => c.ratelimit.limit({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 }));
      await expectSdkError(
        h,
        (await w.client(["ratelimit.*.limit"])).ratelimit.limit({ namespace: uid("fresh"), identifier: "x", limit: 1, duration: 1_000 }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("410: a deleted namespace (GoneErrorResponse)", async () => {
      const ns = await namespace();
      await softDelete(ns.name);
      await expectSdkError(
        h,
        admin.ratelimit.limit({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 }),
        GoneErrorResponse,
        410,
        "err:svc:data:ratelimit_namespace_gone",
      );
    });
  });

  describe("multiLimit", () => {
    it("200: every check's result; all or nothing when one fails", () =>
      withClock(h, midMinute(), async () => {
        const a = uid("ns_a");
        const b = uid("ns_b");
        const c = await w.client(["ratelimit.*.limit", "ratelimit.*.create_namespace"]);
        const res = await ok(
          c.ratelimit.multiLimit([
            { namespace: a, identifier: "u", limit: 5, duration: 60_000, cost: 2 },
            { namespace: b, identifier: "u", limit: 1, duration: 60_000 },
          ]),
        );
        expect(res.data).toEqual({
          passed: true,
          limits: [
            { namespace: a, identifier: "u", limit: 5, remaining: 3, reset: expect.any(Number), passed: true },
            { namespace: b, identifier: "u", limit: 1, remaining: 0, reset: expect.any(Number), passed: true },
          ],
        });
        const denied = await ok(
          c.ratelimit.multiLimit([
            { namespace: a, identifier: "u", limit: 5, duration: 60_000 },
            { namespace: b, identifier: "u", limit: 1, duration: 60_000 },
          ]),
        );
        expect(denied.data.passed).toBe(false);
        expect(denied.data.limits.map((l) => l.passed)).toEqual([true, false]);
        // Nothing was consumed by the refused call: a still has 3.
        expect((await admin.ratelimit.limit({ namespace: a, identifier: "u", limit: 5, duration: 60_000, cost: 0 })).data.remaining).toBe(3);
      }));

    it("400: an empty array; a bad item names its index", async () => {
      await expectBadRequest(h, admin.ratelimit.multiLimit([]), "limits");
      await expectBadRequest(h, admin.ratelimit.multiLimit([{ namespace: uid("ns"), identifier: "u", limit: 0, duration: 1_000 }]), "limits[0].limit");
    });

    it("401 and 403", async () => {
      const ns = await namespace();
      await expectAuthFailures((c) => c.ratelimit.multiLimit([{ namespace: ns.name, identifier: "u", limit: 1, duration: 1_000 }]));
    });

    it("410: one namespace deleted", async () => {
      const ns = await namespace();
      await softDelete(ns.name);
      await expectSdkError(
        h,
        admin.ratelimit.multiLimit([
          { namespace: uid("live"), identifier: "u", limit: 1, duration: 1_000 },
          { namespace: ns.name, identifier: "u", limit: 1, duration: 1_000 },
        ]),
        GoneErrorResponse,
        410,
        "err:svc:data:ratelimit_namespace_gone",
      );
    });
  });

  describe("setOverride", () => {
    it("200: an overrideId, the same one when set again (upsert)", async () => {
      const ns = await namespace();
      const c = await w.client([`ratelimit.${ns.id}.set_override`]);
      const first = await ok(c.ratelimit.setOverride({ namespace: ns.name, identifier: "acme", limit: 50, duration: 60_000 }));
      expect(first.data.overrideId).toMatch(/^rlor_/);
      const again = await ok(c.ratelimit.setOverride({ namespace: ns.id, identifier: "acme", limit: 0, duration: 1_000 }));
      expect(again.data.overrideId).toBe(first.data.overrideId);
      expect((await admin.ratelimit.getOverride({ namespace: ns.name, identifier: "acme" })).data).toEqual({
        overrideId: first.data.overrideId,
        identifier: "acme",
        limit: 0,
        duration: 1_000,
      });
    });

    it("400: a negative limit names `limit`", async () => {
      const ns = await namespace();
      await expectBadRequest(h, admin.ratelimit.setOverride({ namespace: ns.name, identifier: "x", limit: -1, duration: 1_000 }), "limit");
    });

    it("401 and 403", async () => {
      const ns = await namespace();
      await expectAuthFailures((c) => c.ratelimit.setOverride({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 }));
    });

    it("404: an unknown namespace is not created", async () => {
      await expectSdkError(
        h,
        admin.ratelimit.setOverride({ namespace: uid("nons"), identifier: "x", limit: 1, duration: 1_000 }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_namespace_not_found",
      );
    });
  });

  describe("getOverride", () => {
    it("200: the override, exact or through a wildcard", async () => {
      const ns = await namespace();
      const { overrideId } = (await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "team_*", limit: 7, duration: 2_000 })).data;
      const c = await w.client([`ratelimit.${ns.id}.read_override`]);
      const want = { overrideId, identifier: "team_*", limit: 7, duration: 2_000 };
      expect((await ok(c.ratelimit.getOverride({ namespace: ns.name, identifier: "team_*" }))).data).toEqual(want);
      expect((await ok(c.ratelimit.getOverride({ namespace: ns.id, identifier: "team_42" }))).data).toEqual(want);
    });

    it("400: an empty namespace names `namespace`", async () => {
      await expectBadRequest(h, admin.ratelimit.getOverride({ namespace: "", identifier: "x" }), "namespace");
    });

    it("401; without read_override the answer is 404 override_not_found (masked on purpose)", async () => {
      const ns = await namespace();
      await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 });
      await expectAuthFailures((c) => c.ratelimit.getOverride({ namespace: ns.name, identifier: "x" }), false);
      await expectSdkError(
        h,
        (await w.client(NOTHING)).ratelimit.getOverride({ namespace: ns.name, identifier: "x" }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_override_not_found",
      );
    });

    // keyhold's override_not_found covers an unknown namespace too (docs/errors.md, "Codes"), so it is not namespace_not_found here.
    it("404: no override, and an unknown namespace, are override_not_found with the seed's detail", async () => {
      const ns = await namespace();
      for (const namespace of [ns.name, uid("nons")]) {
        const err = await expectSdkError(
          h,
          admin.ratelimit.getOverride({ namespace, identifier: "none" }),
          NotFoundErrorResponse,
          404,
          "err:svc:data:ratelimit_override_not_found",
        );
        expect(err.error.detail).toBe("The requested rate limit override could not be found");
      }
    });
  });

  describe("listOverrides", () => {
    it("200: pages of overrides (the SDK's default limit is 10) through the iterator", async () => {
      const ns = await namespace();
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        ids.push((await admin.ratelimit.setOverride({ namespace: ns.name, identifier: `id_${i}`, limit: i, duration: 1_000 + i })).data.overrideId);
      }
      const c = await w.client([`ratelimit.${ns.id}.read_override`]);
      const first = await ok(c.ratelimit.listOverrides({ namespace: ns.name }));
      expect(first.result.data).toHaveLength(10);
      expect(first.result.pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
      const all = [];
      for await (const page of first) all.push(...page.result.data);
      expect(all.map((o) => o.overrideId).sort()).toEqual([...ids].sort());
      const o3 = all.find((o) => o.identifier === "id_3");
      expect(o3).toEqual({ overrideId: ids[3], identifier: "id_3", limit: 3, duration: 1_003 });
    });

    it("400: limit 0 names `limit`", async () => {
      const ns = await namespace();
      await expectBadRequest(h, admin.ratelimit.listOverrides({ namespace: ns.name, limit: 0 }), "limit");
    });

    it("401 and 403", async () => {
      const ns = await namespace();
      await expectAuthFailures((c) => c.ratelimit.listOverrides({ namespace: ns.name }));
    });

    it("404: an unknown namespace", async () => {
      await expectSdkError(
        h,
        admin.ratelimit.listOverrides({ namespace: uid("nons") }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_namespace_not_found",
      );
    });
  });

  describe("deleteOverride", () => {
    it("200: {} and the override is gone", async () => {
      const ns = await namespace();
      await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "gone", limit: 1, duration: 1_000 });
      const res = await ok((await w.client([`ratelimit.${ns.id}.delete_override`])).ratelimit.deleteOverride({ namespace: ns.name, identifier: "gone" }));
      expect(res.data).toEqual({});
      await expectSdkError(
        h,
        admin.ratelimit.getOverride({ namespace: ns.name, identifier: "gone" }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_override_not_found",
      );
    });

    it("400: an empty identifier names `identifier`", async () => {
      const ns = await namespace();
      await expectBadRequest(h, admin.ratelimit.deleteOverride({ namespace: ns.name, identifier: "" }), "identifier");
    });

    it("401 and 403", async () => {
      const ns = await namespace();
      await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 });
      await expectAuthFailures((c) => c.ratelimit.deleteOverride({ namespace: ns.name, identifier: "x" }));
    });

    it("404: a second delete, and an unknown namespace (both override_not_found, as the seed says)", async () => {
      const ns = await namespace();
      await admin.ratelimit.setOverride({ namespace: ns.name, identifier: "x", limit: 1, duration: 1_000 });
      await admin.ratelimit.deleteOverride({ namespace: ns.name, identifier: "x" });
      await expectSdkError(
        h,
        admin.ratelimit.deleteOverride({ namespace: ns.name, identifier: "x" }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_override_not_found",
      );
      await expectSdkError(
        h,
        admin.ratelimit.deleteOverride({ namespace: uid("nons"), identifier: "x" }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:ratelimit_override_not_found",
      );
    });
  });
});
