// Shared by the analytics contract tests: verifications and rate-limit checks
// made through the API, then written by the recorder before the query runs.
import { expect, it } from "vitest";
import type { Harness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectInvalid, expectOk } from "./helpers.js";

export const VERIFY = "/v2/analytics.getVerifications";
export const RATELIMITS = "/v2/analytics.getRatelimits";

/** Runs a query as `rk`; returns the HTTP answer. */
export const query = (h: Harness, path: string, q: string, rk: string) => h.post(path, { query: q }, rk);

/**
 * Two APIs of the workspace: `a`'s key (2 credits) verified 3 times with tags
 * (VALID, VALID, USAGE_EXCEEDED), `b`'s once (VALID); returns their ids.
 */
export async function seedVerifications(h: Harness, rk: string): Promise<{ a: { apiId: string; keyId: string }; b: { apiId: string; keyId: string } }> {
  const aApi = await createApi(h, undefined, rk);
  const bApi = await createApi(h, undefined, rk);
  const aKey = await createKey(h, aApi, { credits: { remaining: 2 } }, rk);
  const bKey = await createKey(h, bApi, {}, rk);
  for (let i = 0; i < 3; i++) expectOk(await h.post("/v2/keys.verifyKey", { key: aKey.key, tags: ["path=/a", `n=${i}`] }, rk));
  expectOk(await h.post("/v2/keys.verifyKey", { key: bKey.key }, rk));
  await h.deps.analytics.flush();
  return { a: { apiId: aApi, keyId: aKey.keyId }, b: { apiId: bApi, keyId: bKey.keyId } };
}

export async function keySpaceOf(h: Harness, apiId: string): Promise<string> {
  const [rs] = await h.db.pool.query("SELECT key_auth_id FROM apis WHERE id = ?", [apiId]);
  return String((rs as Array<{ key_auth_id: string }>)[0]?.key_auth_id);
}

/** Three checks of one identifier against a limit of 2 (2 passed, 1 refused), and one of another. */
export async function seedRatelimits(h: Harness, rk: string): Promise<void> {
  for (let i = 0; i < 3; i++) expectOk(await h.post("/v2/ratelimit.limit", { namespace: "analytics", identifier: "user-1", limit: 2, duration: 60_000 }, rk));
  expectOk(await h.post("/v2/ratelimit.limit", { namespace: "analytics", identifier: "user-2", limit: 2, duration: 60_000 }, rk));
  await h.deps.analytics.flush();
}

type Family = "verifications" | "ratelimits";
const RAW: Record<Family, string> = { verifications: "key_verifications_v1", ratelimits: "ratelimits_v1" };
const OTHER_FAMILY: Record<Family, string> = { verifications: "ratelimits_v1", ratelimits: "key_verifications_v1" };
const PHYSICAL: Record<Family, string> = { verifications: "analytics_verifications", ratelimits: "analytics_ratelimits" };

const TYPE = "err:user:bad_request:invalid_analytics_query_type";
const TABLE = "err:user:bad_request:invalid_analytics_table";
const FUNCTION = "err:user:bad_request:invalid_analytics_function";
const QUERY = "err:user:bad_request:invalid_analytics_query";

/** The 400s of an analytics operation: the body's field rules, then what the query compiler refuses. */
export function describeAnalyticsRefusals(h: Harness, path: string, family: Family): void {
  const raw = RAW[family];
  it.each<[string, unknown, string]>([
    ["query missing", {}, "body.query"],
    ["query empty", { query: "" }, "body.query"],
    ["query of 10,001 characters", { query: `SELECT 1 ${" ".repeat(9_992)}` }, "body.query"],
    ["query not a string", { query: ["SELECT 1"] }, "body.query"],
    ["an unknown field", { query: "SELECT 1", workspaceId: "ws_other" }, "body.workspaceId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(path, body, await admin(h)), field);
  });

  it.each<[string, string, string]>([
    ["a DELETE", `DELETE FROM ${raw}`, TYPE],
    ["an UPDATE", `UPDATE ${raw} SET request_id = 'x'`, TYPE],
    ["a DROP", `DROP TABLE ${raw}`, TYPE],
    ["two statements", "SELECT 1; SELECT 2", QUERY],
    ["a physical table", `SELECT * FROM ${PHYSICAL[family]}`, TABLE],
    ["keyhold's own tables", "SELECT hash FROM `keys`", TABLE],
    ["another schema", "SELECT * FROM information_schema.tables", TABLE],
    ["mysql.user", "SELECT user FROM mysql.user", TABLE],
    ["a physical table in a subquery", `SELECT count() FROM ${raw} WHERE request_id IN (SELECT id FROM \`keys\`)`, TABLE],
    ["a physical table after UNION", `SELECT request_id FROM ${raw} UNION SELECT request_id FROM ${PHYSICAL[family]}`, TABLE],
    ["the other family's table", `SELECT * FROM ${OTHER_FAMILY[family]}`, TABLE],
    ["sleep()", `SELECT sleep(5) FROM ${raw}`, FUNCTION],
    ["load_file()", "SELECT load_file('/etc/passwd') AS f", FUNCTION],
    ["benchmark()", "SELECT benchmark(100000000, md5('x')) AS b", FUNCTION],
    ["not SQL", "SELEKT everything", QUERY],
  ])("%s -> 400 naming what is refused", async (_label, q, code) => {
    const res = await query(h, path, q, await admin(h));
    expectError(h, res, 400, code);
    expect(res.body.error.errors[0].location).toBe("body.query");
    expect(res.body.error.detail.length).toBeGreaterThan(10);
  });

  it("a column no public table has -> 400 naming it", async () => {
    const res = await query(h, path, `SELECT hash FROM ${raw}`, await admin(h));
    expectError(h, res, 400, QUERY);
    expect(res.body.error.detail).toContain("hash");
  });
}

/** The 422s (rows, time) and the 503 of an analytics operation. */
export function describeAnalyticsLimits(h: Harness, path: string, family: Family): void {
  const raw = RAW[family];
  const seed = (rk: string) => (family === "verifications" ? seedVerifications(h, rk).then(() => undefined) : seedRatelimits(h, rk));

  it("more rows than ANALYTICS_MAX_ROWS -> 422 query_result_rows_limit_exceeded; a LIMIT under it answers", async () => {
    const rk = await admin(h);
    await seed(rk);
    const limits = h.deps.analyticsQueries;
    const saved = limits.maxRows;
    limits.maxRows = 10;
    try {
      // 4 rows joined with themselves: 16.
      const res = await query(h, path, `SELECT a.request_id FROM ${raw} a CROSS JOIN ${raw} b`, rk);
      expectError(h, res, 422, "err:user:unprocessable_entity:query_result_rows_limit_exceeded");
      expect(res.body.error.detail).toContain("10 rows");
      expect(expectOk(await query(h, path, `SELECT a.request_id FROM ${raw} a CROSS JOIN ${raw} b LIMIT 10`, rk))).toHaveLength(10);
    } finally {
      limits.maxRows = saved;
    }
  });

  it("a query running longer than ANALYTICS_QUERY_TIMEOUT_MS -> 422 query_execution_timeout", async () => {
    const rk = await admin(h);
    await seed(rk);
    const limits = h.deps.analyticsQueries;
    const saved = limits.timeoutMs;
    limits.timeoutMs = 1;
    try {
      // 8 rows joined 6 times: 262,144 combinations to count, far more than 1 ms of work.
      const res = await query(h, path, `SELECT count() AS n FROM ${raw} a, ${raw} b, ${raw} c, ${raw} d, ${raw} e, ${raw} f`, rk);
      expectError(h, res, 422, "err:user:unprocessable_entity:query_execution_timeout");
    } finally {
      limits.timeoutMs = saved;
    }
  });

  it("the analytics database unreachable -> 503 analytics_connection_failed", async () => {
    const rk = await admin(h);
    const limits = h.deps.analyticsQueries;
    const saved = limits.pool;
    const mysql = await import("mysql2/promise");
    const dead = mysql.createPool({ host: "127.0.0.1", port: 1, user: "root", connectTimeout: 500 });
    limits.pool = dead;
    try {
      expectError(h, await query(h, path, `SELECT count() AS n FROM ${raw}`, rk), 503, "err:svc:data:analytics_connection_failed");
    } finally {
      limits.pool = saved;
      await dead.end();
    }
  });
}
