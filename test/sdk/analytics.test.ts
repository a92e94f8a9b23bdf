// @unkey/api against keyhold: the `analytics` group's getVerifications and
// getRatelimits, as the SDK's users write them (ClickHouse-style functions over
// the public tables), and what they get for queries outside the rules.
import type { Unkey } from "@unkey/api";
import { BadRequestErrorResponse, ForbiddenErrorResponse, UnauthorizedErrorResponse, UnprocessableEntityErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSdkError, NOTHING, ok, sdkFor, uid, useSdk } from "./support.js";

describe("@unkey/api analytics.*", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;
  let apiId: string;
  let keyId: string;

  beforeAll(async () => {
    admin = await w.admin();
    apiId = (await admin.apis.createApi({ name: uid("api") })).data.apiId;
    const k = (await admin.keys.createKey({ apiId, credits: { remaining: 1 } })).data;
    keyId = k.keyId;
    await admin.keys.verifyKey({ key: k.key, tags: ["path=/v1/x"] });
    await admin.keys.verifyKey({ key: k.key, tags: ["path=/v1/x"] });
    await admin.ratelimit.limit({ namespace: "sdk-analytics", identifier: "user-1", limit: 1, duration: 60_000 });
    await admin.ratelimit.limit({ namespace: "sdk-analytics", identifier: "user-1", limit: 1, duration: 60_000 });
    await h.deps.analytics.flush();
  });

  it("getVerifications: the rows of a query with countIf, a time bucket and a 30-day window", async () => {
    const res = await ok(
      admin.analytics.getVerifications({
        query: `SELECT key_id, countIf(outcome = 'VALID') AS valid, countIf(outcome = 'USAGE_EXCEEDED') AS exceeded, toStartOfDay(time) AS day
                FROM key_verifications_v1 WHERE key_id = '${keyId}' AND time >= now() - INTERVAL 30 DAY GROUP BY key_id, day`,
      }),
    );
    expect(res.data).toEqual([{ key_id: keyId, valid: 1, exceeded: 1, day: expect.stringMatching(/ 00:00:00$/) }]);
    const perDay = await ok(
      admin.analytics.getVerifications({ query: `SELECT sum(count) AS total FROM key_verifications_per_day_v1 WHERE key_id = '${keyId}'` }),
    );
    expect(perDay.data).toEqual([{ total: 2 }]);
  });

  it("getRatelimits: passed and refused per identifier", async () => {
    const res = await ok(
      admin.analytics.getRatelimits({
        query: "SELECT identifier, countIf(passed = 1) AS passed, countIf(passed = 0) AS refused FROM ratelimits_v1 GROUP BY identifier",
      }),
    );
    expect(res.data).toEqual([{ identifier: "user-1", passed: 1, refused: 1 }]);
  });

  it("a query reaching for every workspace's rows (the physical table, information_schema) is refused with BadRequestErrorResponse", async () => {
    for (const query of ["SELECT * FROM analytics_verifications", "SELECT table_name FROM information_schema.tables"]) {
      const err = await expectSdkError(
        h,
        admin.analytics.getVerifications({ query }),
        BadRequestErrorResponse,
        400,
        "err:user:bad_request:invalid_analytics_table",
      );
      expect(err.error.errors[0]?.location).toBe("body.query");
    }
    // Another workspace's rows named in the query: rewritten away, so nothing comes back.
    const other = sdkFor(w.url, await h.rootKey(["apis.*.read_analytics"], "sdk-analytics-other"));
    const res = await ok(other.analytics.getVerifications({ query: `SELECT count() AS n FROM key_verifications_v1 WHERE key_id = '${keyId}'` }));
    expect(res.data).toEqual([{ n: 0 }]);
  });

  it("a forbidden function, a non-SELECT and too many rows: typed errors", async () => {
    await expectSdkError(
      h,
      admin.analytics.getVerifications({ query: "SELECT sleep(1) AS s" }),
      BadRequestErrorResponse,
      400,
      "err:user:bad_request:invalid_analytics_function",
    );
    await expectSdkError(
      h,
      admin.analytics.getRatelimits({ query: "DELETE FROM ratelimits_v1" }),
      BadRequestErrorResponse,
      400,
      "err:user:bad_request:invalid_analytics_query_type",
    );
    const limits = h.deps.analyticsQueries;
    const saved = limits.maxRows;
    limits.maxRows = 1;
    try {
      await expectSdkError(
        h,
        admin.analytics.getVerifications({ query: "SELECT request_id FROM key_verifications_v1" }),
        UnprocessableEntityErrorResponse,
        422,
        "err:user:unprocessable_entity:query_result_rows_limit_exceeded",
      );
    } finally {
      limits.maxRows = saved;
    }
  });

  it("401 and 403 as the SDK's typed errors", async () => {
    const query = "SELECT count() AS n FROM key_verifications_v1";
    await expectSdkError(h, w.unknownKey().analytics.getVerifications({ query }), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(
      h,
      (await w.client(NOTHING)).analytics.getVerifications({ query }),
      ForbiddenErrorResponse,
      403,
      "err:svc:authorization:insufficient_permissions",
    );
    await expectSdkError(
      h,
      (await w.client(["apis.*.read_analytics"])).analytics.getRatelimits({ query: "SELECT count() AS n FROM ratelimits_v1" }),
      ForbiddenErrorResponse,
      403,
      "err:svc:authorization:insufficient_permissions",
    );
  });
});
