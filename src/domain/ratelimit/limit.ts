// ratelimit.limit and ratelimit.multiLimit: standalone limits by arbitrary
// identifier inside a namespace, with overrides (docs/ratelimits.md, "Standalone
// limits: `ratelimit.limit` and `ratelimit.multiLimit`").
import { MISS } from "../../cache/verification-cache.js";
import type { LimitCheck } from "../../storage/memory-limiter.js";
import { findOverrideCandidates } from "../../storage/ratelimit.js";
import type { Principal } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { MAX_SAFE } from "../limits.js";
import { Validator } from "../validate.js";
import { IDENTIFIER_RULE, namespacesForLimit, validateNamespaceRef } from "./namespaces.js";
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

/** 1 s to 30 days. */
export const LIMIT_DURATION = { min: 1_000, max: 2_592_000_000 } as const;
export const MULTI_LIMIT_ITEMS = { min: 1, max: 100 } as const;

function validateLimitInput(v: Validator, prefix: string, input: LimitInput): void {
  validateNamespaceRef(v, `${prefix}namespace`, input.namespace);
  v.required(`${prefix}identifier`, input.identifier, IDENTIFIER_RULE);
  v.number(`${prefix}limit`, input.limit, { min: 1, max: MAX_SAFE });
  v.number(`${prefix}duration`, input.duration, LIMIT_DURATION);
  v.number(`${prefix}cost`, input.cost, { min: 0, max: MAX_SAFE });
}

/** Override candidates for an identifier, through the cache (evicted by every override change). */
async function overrideCandidates(deps: Deps, namespaceId: string, identifier: string) {
  const key = `${namespaceId}|${identifier}`;
  const hit = deps.overrideCache.get(key);
  if (hit !== undefined && hit !== MISS) return hit.rows;
  const generation = deps.overrideCache.generation;
  const rows = await findOverrideCandidates(deps.pool, namespaceId, identifier);
  if (deps.overrideCache.generation === generation) deps.overrideCache.set(key, { rows }, [`ns:${namespaceId}`]);
  return rows;
}

interface Planned {
  input: LimitInput;
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
      return { input, check, overrideId: override?.id };
    }),
  );
}

export async function limit(deps: Deps, p: Principal, input: LimitInput): Promise<LimitOutcome> {
  const v = new Validator();
  validateLimitInput(v, "", input);
  v.done();
  const [planned] = await plan(deps, p, [input]);
  if (planned === undefined) throw new Error("no check planned");
  const [r] = await deps.limiter.check([planned.check], deps.clock.now());
  if (r === undefined) throw new Error("the limiter returned no result");
  return { limit: planned.check.limit, remaining: r.passed ? r.remaining : 0, reset: r.reset, success: r.passed, overrideId: planned.overrideId };
}

/** All or nothing: when any check fails, no counter is consumed (the limiter's batch rule). */
export async function multiLimit(deps: Deps, p: Principal, inputs: readonly LimitInput[]): Promise<MultiLimitOutcome> {
  const v = new Validator();
  if (inputs.length < MULTI_LIMIT_ITEMS.min || inputs.length > MULTI_LIMIT_ITEMS.max) {
    v.add("limits", `The request must hold between ${MULTI_LIMIT_ITEMS.min} and ${MULTI_LIMIT_ITEMS.max} limits (got ${inputs.length}).`);
  } else {
    inputs.forEach((input, i) => {
      validateLimitInput(v, `limits[${i}].`, input);
    });
  }
  v.done();
  const planned = await plan(deps, p, inputs);
  const results = await deps.limiter.check(
    planned.map((x) => x.check),
    deps.clock.now(),
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
  return { passed: limits.every((l) => l.passed), limits };
}
