// ratelimit.limit and ratelimit.multiLimit: standalone limits by arbitrary
// identifier inside a namespace, with overrides (docs/ratelimits.md, "Standalone
// limits: `ratelimit.limit` and `ratelimit.multiLimit`").
import { MISS } from "../../cache/verification-cache.js";
import { type Answer, andThen } from "../../core/answer.js";
import { keptCounter, type LimitCheck, type LimitResult } from "../../storage/memory-limiter.js";
import { findOverrideCandidates } from "../../storage/ratelimit.js";
import type { Principal } from "../auth/principal.js";
import type { Deps, OverrideCandidates } from "../deps.js";
import { cachedNamespaceNow, namespacesForLimit, requireLimitOn } from "./namespaces.js";
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

/** The limiter's name for an identifier's counters in a namespace (the window's length is added by the limiter). */
const limitKey = (p: Principal, namespaceId: string, identifier: string): string => `${p.workspaceId}|ns|${namespaceId}|${identifier}`;

/**
 * Override candidates for an identifier, through the cache (evicted by every
 * override change); a read keeps the key and counter of the check it plans.
 */
async function overrideCandidates(deps: Deps, p: Principal, input: LimitInput, namespaceId: string): Promise<OverrideCandidates> {
  const key = `${namespaceId}|${input.identifier}`;
  const hit = deps.overrideCache.get(key);
  if (hit !== undefined && hit !== MISS) return hit;
  const version = deps.overrideCache.version;
  const rows = await findOverrideCandidates(deps.pool, namespaceId, input.identifier);
  const duration = bestOverride(input.identifier, rows)?.duration ?? input.duration;
  const read: OverrideCandidates = { rows, kept: { duration, ...keptCounter(limitKey(p, namespaceId, input.identifier), duration) } };
  deps.overrideCache.setRead(version, key, read, [`ns:${namespaceId}`]);
  return read;
}

interface Planned {
  input: LimitInput;
  namespaceId: string;
  check: LimitCheck;
  overrideId: string | undefined;
}

/**
 * A request's limiter check, with the override (if any) that replaces its
 * limit and duration; the cached key and counter when they are this window's
 * (a request's own `duration` may differ from the one they were made for).
 */
function planned(p: Principal, input: LimitInput, namespaceId: string, candidates: OverrideCandidates): Planned {
  const override = bestOverride(input.identifier, candidates.rows);
  const duration = override?.duration ?? input.duration;
  const kept = candidates.kept?.duration === duration ? candidates.kept : undefined;
  const check: LimitCheck = {
    key: kept?.key ?? limitKey(p, namespaceId, input.identifier),
    limit: override?.limit ?? input.limit,
    duration,
    cost: input.cost ?? 1,
    counter: kept?.counter,
  };
  return { input, namespaceId, check, overrideId: override?.id };
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
      return planned(p, input, ns.id, await overrideCandidates(deps, p, input, ns.id));
    }),
  );
}

/**
 * plan() of one request whose namespace and override candidates are both
 * cached, without a promise: the same checks in the same order (the namespace's
 * `limit` grant, then 410 for a deleted one). Undefined when either is not
 * cached; plan() then reads it. A hot identifier's ratelimit.limit made seven
 * promises in plan() (namespacesForLimit, cachedNamespace, overrideCandidates
 * and their Promise.all), each settled in a microtask of its own.
 */
function planCached(deps: Deps, p: Principal, input: LimitInput): Planned | undefined {
  const ns = cachedNamespaceNow(deps, p.workspaceId, input.namespace);
  if (ns === undefined) return undefined;
  const candidates = deps.overrideCache.get(`${ns.id}|${input.identifier}`);
  if (candidates === undefined || candidates === MISS) return undefined;
  requireLimitOn(p, ns);
  return planned(p, input, ns.id, candidates);
}

/** One analytics event per check (ratelimits_v1), written behind. */
function recordChecks(deps: Deps, p: Principal, now: number, checks: ReadonlyArray<{ namespaceId: string; identifier: string; passed: boolean }>): void {
  for (const c of checks) recordCheck(deps, p, now, c.namespaceId, c.identifier, c.passed);
}

function recordCheck(deps: Deps, p: Principal, now: number, namespaceId: string, identifier: string, passed: boolean): void {
  deps.analytics.ratelimit({ requestId: p.origin?.requestId ?? "", time: now, workspaceId: p.workspaceId, namespaceId, identifier, passed });
}

/**
 * The outcome as a value when nothing waited (the namespace and override
 * candidates cached, the in-process limiter), a promise otherwise; the doors
 * await either.
 */
export function limit(deps: Deps, p: Principal, input: LimitInput): Answer<LimitOutcome> {
  const cached = planCached(deps, p, input);
  if (cached !== undefined) return limitPlanned(deps, p, input, cached);
  return plan(deps, p, [input]).then(([one]) => limitPlanned(deps, p, input, one));
}

function limitPlanned(deps: Deps, p: Principal, input: LimitInput, one: Planned | undefined): Answer<LimitOutcome> {
  if (one === undefined) throw new Error("no check planned");
  const now = deps.clock.now();
  const answer = ([r]: LimitResult[]): LimitOutcome => {
    if (r === undefined) throw new Error("the limiter returned no result");
    recordCheck(deps, p, now, one.namespaceId, input.identifier, r.passed);
    return { limit: one.check.limit, remaining: r.passed ? r.remaining : 0, reset: r.reset, success: r.passed, overrideId: one.overrideId };
  };
  return andThen(deps.limiter.check([one.check], now), answer);
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
