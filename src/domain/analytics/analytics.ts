// analytics.getVerifications and analytics.getRatelimits: a user's SQL over the
// public analytics tables, compiled (storage/analytics-sql/query.ts) into one SELECT that can read only
// the caller's workspace, and only the APIs or namespaces its grants name, then
// run read-only, limited in time and rows (src/storage/analytics.ts).
import { AppError } from "../../core/errors.js";
import { AnalyticsQueryFailed, keySpacesOf, namespaceIdsOf, runAnalyticsQuery } from "../../storage/analytics.js";
import { type AnalyticsFamily, AnalyticsQueryError, type AnalyticsScope, compileAnalyticsQuery } from "../../storage/analytics-sql/query.js";
import { holdsAny, type Principal, requireSomeGrantFor } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import type { AnalyticsLimits } from "./limits.js";

export type { AnalyticsLimits };

export type AnalyticsRow = Record<string, unknown>;

/**
 * Whole workspace with `apis.*.read_analytics`; otherwise the key spaces of the
 * APIs its grants name (`apis.<apiId>.read_analytics`); 403 with neither.
 */
async function verificationScope(deps: Deps, p: Principal): Promise<AnalyticsScope> {
  requireSomeGrantFor(p, "apis", "read_analytics", "apiId");
  if (holdsAny(p, ["apis.*.read_analytics"])) return { workspaceId: p.workspaceId };
  const spaces = await keySpacesOf(deps.pool, p.workspaceId);
  return {
    workspaceId: p.workspaceId,
    keySpaceIds: spaces.filter((s) => holdsAny(p, [`apis.${s.apiId}.read_analytics`])).map((s) => s.keySpaceId),
  };
}

async function ratelimitScope(deps: Deps, p: Principal): Promise<AnalyticsScope> {
  requireSomeGrantFor(p, "ratelimit", "read_analytics", "namespaceId");
  if (holdsAny(p, ["ratelimit.*.read_analytics"])) return { workspaceId: p.workspaceId };
  const ids = await namespaceIdsOf(deps.pool, p.workspaceId);
  return { workspaceId: p.workspaceId, namespaceIds: ids.filter((id) => holdsAny(p, [`ratelimit.${id}.read_analytics`])) };
}

export async function getVerifications(deps: Deps, limits: AnalyticsLimits, p: Principal, query: string): Promise<AnalyticsRow[]> {
  return run(limits, query, "verifications", await verificationScope(deps, p));
}

export async function getRatelimits(deps: Deps, limits: AnalyticsLimits, p: Principal, query: string): Promise<AnalyticsRow[]> {
  return run(limits, query, "ratelimits", await ratelimitScope(deps, p));
}

async function run(limits: AnalyticsLimits, query: string, family: AnalyticsFamily, scope: AnalyticsScope): Promise<AnalyticsRow[]> {
  let sql: string;
  try {
    sql = compileAnalyticsQuery(query, family, scope, { maxRows: limits.maxRows }).sql;
  } catch (err) {
    if (err instanceof AnalyticsQueryError) throw refused(`err:user:bad_request:${err.code}`, err.message);
    throw err;
  }
  let rows: AnalyticsRow[];
  try {
    rows = await runAnalyticsQuery(limits.pool, sql, limits.timeoutMs);
  } catch (err) {
    if (!(err instanceof AnalyticsQueryFailed)) throw err;
    if (err.failure === "timeout")
      throw new AppError(
        "err:user:unprocessable_entity:query_execution_timeout",
        `The query ran longer than ${limits.timeoutMs} ms; narrow its time range or read a roll-up table.`,
      );
    if (err.failure === "invalid") throw refused("err:user:bad_request:invalid_analytics_query", `The database refused the query: ${err.message}`);
    throw new AppError("err:svc:data:analytics_connection_failed");
  }
  if (rows.length > limits.maxRows)
    throw new AppError(
      "err:user:unprocessable_entity:query_result_rows_limit_exceeded",
      `The query returns more than ${limits.maxRows} rows; aggregate, or add a LIMIT of at most ${limits.maxRows}.`,
    );
  return rows.map(publicRow);
}

/** A 400 whose one field error is the query. */
const refused = (code: "err:user:bad_request:invalid_analytics_query" | `err:user:bad_request:${string}`, message: string): AppError =>
  new AppError(code as "err:user:bad_request:invalid_analytics_query", message, [{ location: "body.query", message }]);

/**
 * A row as JSON: tags as the array they were sent as (stored as JSON text),
 * and nothing a JSON object cannot hold (bytes as text, BigInt as a number when
 * exact, as text otherwise).
 */
function publicRow(r: AnalyticsRow): AnalyticsRow {
  const out: AnalyticsRow = {};
  for (const [k, v] of Object.entries(r)) out[k] = k === "tags" ? tagsValue(v) : jsonValue(v);
  return out;
}

function jsonValue(v: unknown): unknown {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  if (v instanceof Date) return v.toISOString();
  return String(v);
}

/** A column named tags that holds a JSON array of strings (as stored) comes back as that array; anything else as it is. */
function tagsValue(v: unknown): unknown {
  if (typeof v !== "string" || !v.startsWith("[")) return jsonValue(v);
  try {
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) && parsed.every((t) => typeof t === "string") ? parsed : v;
  } catch {
    return v;
  }
}
