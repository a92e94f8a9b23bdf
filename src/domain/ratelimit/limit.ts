// ratelimit.limit and ratelimit.multiLimit: standalone limits by arbitrary
// identifier inside a namespace, with overrides (docs/ratelimits.md, "Standalone
// limits: `ratelimit.limit` and `ratelimit.multiLimit`").
import { MISS } from "../../cache/verification-cache.js";
import type { LimitCheck } from "../../storage/memory-limiter.js";
import { findOverrideCandidates } from "../../storage/ratelimit.js";
import type { Principal } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { namespacesForLimit } from "./namespaces.js";
import { bestOverride } from "./override-match.js";

export interface LimitInput {
  namespace: string;
  identifier: string;
  limit: number;
  duration: number;
  cost?: number | undefined;
}

export interface LimitOutcome {
  limit: number;
  remaining: number;
  reset: number;
  success: boolean;
  overrideId: string | undefined;
}

export interface MultiLimitOutcome {
  passed: boolean;
  limits: Array<{ namespace: string; identifier: string; limit: number; remaining: number; reset: number; passed: boolean; overrideId: string | undefined }>;
}

/** Override candidates for an identifier, through the cache (evicted by every override change). */
async function overrideCandidates(deps: Deps, namespaceId: string, identifier: string) {
  const key = `${namespaceId}|${identifier}`;
  const hit = deps.overrideCache.get(key);
  if (hit !== undefined && hit !== MISS) return hit.rows;
  const version = deps.overrideCache.version;
  const rows = await findOverrideCandidates(deps.pool, namespaceId, identifier);
  deps.overrideCache.setRead(version, key, { rows }, [`ns:${namespaceId}`]);
  return rows;
}

interface Planned {
  input: LimitInput;
  namespaceId: string;
  check: LimitCheck;
  overrideId: string | undefined;
}

/**
 * Resolves namespaces (permissions, auto-creation, 410) and overrides, and turns
 * each request into a limiter check. An override replaces both limit and
 * duration; the cost still comes from the request. An override limit of 0 is
 * passed on as is: the limiter denies a zero limit whatever the cost.
 */
async function plan(deps: Deps, p: Principal, inputs: readonly LimitInput[]): Promise<Planned[]> {
  const namespaces = await namespacesForLimit(
    deps,
    p,
    inputs.map((i) => i.namespace),
  );
  return Promise.all(
    inputs.map(async (input) => {
      const ns = namespaces.get(input.namespace);
      if (ns === undefined) throw new Error(`namespace ${input.namespace} was not resolved`);
      const override = bestOverride(input.identifier, await overrideCandidates(deps, ns.id, input.identifier));
      const check: LimitCheck = {
        key: `${p.workspaceId}|ns|${ns.id}|${input.identifier}`,
        limit: override?.limit ?? input.limit,
        duration: override?.duration ?? input.duration,
        cost: input.cost ?? 1,
      };
      return { input, namespaceId: ns.id, check, overrideId: override?.id };
    }),
  );
}

/** One analytics event per check (ratelimits_v1), written behind. */
function recordChecks(deps: Deps, p: Principal, now: number, checks: ReadonlyArray<{ namespaceId: string; identifier: string; passed: boolean }>): void {
  for (const c of checks)
    deps.analytics.ratelimit({
      requestId: p.origin?.requestId ?? "",
      time: now,
      workspaceId: p.workspaceId,
      namespaceId: c.namespaceId,
      identifier: c.identifier,
      passed: c.passed,
    });
}

export async function limit(deps: Deps, p: Principal, input: LimitInput): Promise<LimitOutcome> {
  const [planned] = await plan(deps, p, [input]);
  if (planned === undefined) throw new Error("no check planned");
  const now = deps.clock.now();
  const [r] = await deps.limiter.check([planned.check], now);
  if (r === undefined) throw new Error("the limiter returned no result");
  recordChecks(deps, p, now, [{ namespaceId: planned.namespaceId, identifier: input.identifier, passed: r.passed }]);
  return { limit: planned.check.limit, remaining: r.passed ? r.remaining : 0, reset: r.reset, success: r.passed, overrideId: planned.overrideId };
}

/** All or nothing: when any check fails, no counter is consumed (the limiter's batch rule). */
export async function multiLimit(deps: Deps, p: Principal, inputs: readonly LimitInput[]): Promise<MultiLimitOutcome> {
  const planned = await plan(deps, p, inputs);
  const now = deps.clock.now();
  const results = await deps.limiter.check(
    planned.map((x) => x.check),
    now,
  );
  const limits = planned.map((x, i) => {
    const r = results[i];
    if (r === undefined) throw new Error("the limiter returned too few results");
    return {
      namespace: x.input.namespace,
      identifier: x.input.identifier,
      limit: x.check.limit,
      remaining: r.passed ? r.remaining : 0,
      reset: r.reset,
      passed: r.passed,
      overrideId: x.overrideId,
    };
  });
  recordChecks(
    deps,
    p,
    now,
    limits.map((l, i) => ({ namespaceId: (planned[i] as Planned).namespaceId, identifier: l.identifier, passed: l.passed })),
  );
  return { passed: limits.every((l) => l.passed), limits };
}
