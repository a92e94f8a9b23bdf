// keys.verifyKey: the hot path. Checks run in a fixed order (docs/architecture.md,
// "One request: `POST /v2/keys.verifyKey`", step 8): NOT_FOUND, the query's syntax,
// DISABLED, EXPIRED, INSUFFICIENT_PERMISSIONS, rate limits, credits; the first
// failure wins and later stages consume nothing.

import { type Answer, andThen } from "../../core/answer.js";
import { AppError } from "../../core/errors.js";
import { type KeyRecord, NONE, type RatelimitConfig } from "../../core/records.js";
import { applyRefill, readCredits } from "../../storage/keys.js";
import { flat, keptCounter, type LimitCheck, type LimitResult } from "../../storage/memory-limiter.js";
import { covers, type Principal, requireSomeGrantFor } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { limits } from "../limits.js";
import { Validator } from "../validate.js";
import { hashKey } from "./generate.js";
import { cachedKeyRecord, keyRecordByHash } from "./lookup.js";
import { keyRecordViaMigration } from "./migrated-lookup.js";
import { evaluateQuery, parseQueryCached, type Query } from "./permission-query.js";
import { currentRefillPeriodStart, refillDue } from "./refill.js";

export interface VerifyKeyInput {
  key: string;
  permissions?: string | undefined;
  credits?: { cost: number } | undefined;
  ratelimits: Array<{ name: string; cost?: number | undefined; limit?: number | undefined; duration?: number | undefined }>;
  tags: string[];
  /** A key migration of the caller's workspace to try when the standard lookup misses (migrated-lookup.ts). */
  migrationId?: string | undefined;
}

export interface RatelimitOutcome {
  id: string;
  name: string;
  limit: number;
  duration: number;
  reset: number;
  remaining: number;
  exceeded: boolean;
  autoApply: boolean;
}

export type VerifyCode = "VALID" | "NOT_FOUND" | "DISABLED" | "EXPIRED" | "INSUFFICIENT_PERMISSIONS" | "RATE_LIMITED" | "USAGE_EXCEEDED";

export type VerifyOutcome =
  | { valid: false; code: "NOT_FOUND" }
  | {
      valid: boolean;
      code: Exclude<VerifyCode, "NOT_FOUND">;
      key: KeyRecord;
      /** Remaining credits after this verification; undefined = unlimited. */
      credits: number | undefined;
      ratelimits: RatelimitOutcome[];
    };

const NOT_FOUND: VerifyOutcome = { valid: false, code: "NOT_FOUND" };
const NO_LIMITS: RatelimitOutcome[] = [];
const NO_PLAN: Plan = { configs: NONE, checks: NONE };

/** `apis.<apiId>.verify_key`, made once per API: a string built per request would be hashed anew by the grant memo each time. */
const verifyGrants = new Map<string, string>();
const verifyGrantOf = (apiId: string): string => {
  let g = verifyGrants.get(apiId);
  if (g === undefined) {
    if (verifyGrants.size >= 10_000) verifyGrants.clear();
    verifyGrants.set(apiId, (g = `apis.${apiId}.verify_key`));
  }
  return g;
};

/**
 * The one rule the protos cannot say (their field rules have run already,
 * services/field-rules.ts): an inline limit, `limit` with `duration`, must be one
 * the limiter can enforce, never failing open.
 */
function validate(input: VerifyKeyInput): void {
  let v: Validator | undefined;
  // Tags are stored and read back by anyone with read_analytics: a tag holding
  // the key would put a working secret in the analytics tables.
  for (let i = 0; i < input.tags.length; i++) {
    if (input.key.length >= 8 && (input.tags[i] as string).includes(input.key)) {
      v ??= new Validator();
      v.add(`tags[${i}]`, `tags[${i}] contains the key being verified; tags are stored for analytics and must never hold a secret.`);
    }
  }
  for (let i = 0; i < input.ratelimits.length; i++) {
    const r = input.ratelimits[i] as VerifyKeyInput["ratelimits"][number];
    if (r.limit === undefined || r.duration === undefined) continue;
    v ??= new Validator();
    v.number(`ratelimits[${i}].limit`, r.limit, { min: 1 });
    v.number(`ratelimits[${i}].duration`, r.duration, { min: limits.ratelimitDuration.min });
  }
  v?.done();
}

/** A refused verification spends nothing but still reports the balance (docs/ratelimits.md, "Credits"); read only for a key with credits. */
function refuse(
  deps: Deps,
  p: Principal,
  input: VerifyKeyInput,
  key: KeyRecord,
  now: number,
  code: "DISABLED" | "EXPIRED" | "INSUFFICIENT_PERMISSIONS" | "RATE_LIMITED",
  ratelimits: RatelimitOutcome[] = NO_LIMITS,
): Answer<VerifyOutcome> {
  if (!key.limitedCredits) return outcome(deps, p, input, key, now, code, undefined, ratelimits, 0);
  return readCredits(deps.pool, key.id).then((credits) => outcome(deps, p, input, key, now, code, credits, ratelimits, 0));
}

/** Records the use and the analytics event of a verification that found its key, and makes its outcome. */
function outcome(
  deps: Deps,
  p: Principal,
  input: VerifyKeyInput,
  key: KeyRecord,
  now: number,
  code: Exclude<VerifyCode, "NOT_FOUND">,
  credits: number | undefined,
  ratelimits: RatelimitOutcome[],
  spentCredits: number,
): VerifyOutcome {
  // Every outcome counts as a use; a request refused with an error (an unknown rate limit, 412) does not.
  deps.usage.record(key.id, now);
  deps.analytics.verification({
    requestId: p.origin?.requestId ?? "",
    time: now,
    workspaceId: key.workspaceId,
    keySpaceId: key.keyAuthId,
    apiId: key.apiId,
    keyId: key.id,
    identityId: key.identity?.id ?? "",
    externalId: key.identity?.externalId ?? "",
    outcome: code,
    region: deps.region,
    tags: input.tags,
    spentCredits,
  });
  return { valid: code === "VALID", code, key, credits, ratelimits };
}

/**
 * A verification's outcome: the value itself when the key's record is cached
 * and nothing needs the database or the limiter (a hot key without limits or
 * credits, or one refused before them), a promise otherwise. The doors await
 * either; a hot verification then makes no promise here nor in the layers
 * above it (services/keys.ts, the outcome counter, the JSON door), each of
 * which settled in a microtask of its own.
 */
export function verifyKey(deps: Deps, p: Principal, input: VerifyKeyInput): Answer<VerifyOutcome> {
  validate(input);
  // No verify grant at all is a 403; a grant for other APIs only reads as NOT_FOUND,
  // so the caller cannot tell whether the key exists (docs/auth.md, "401 or 403").
  requireSomeGrantFor(p, "apis", "verify_key", "apiId");
  const hash = hashKey(input.key);
  const key = cachedKeyRecord(deps, hash);
  if (key === null || (key === undefined && input.migrationId !== undefined)) return lookUpAndVerify(deps, p, input, hash, key);
  return verifyRecord(deps, p, input, key);
}

/** The record read from the database (null: not cached), or found through the request's key migration. */
async function lookUpAndVerify(deps: Deps, p: Principal, input: VerifyKeyInput, hash: string, cached: null | undefined): Promise<VerifyOutcome> {
  let key = cached === null ? await keyRecordByHash(deps, hash) : undefined;
  if (key === undefined && input.migrationId !== undefined) key = await keyRecordViaMigration(deps, p, input.key, hash, input.migrationId);
  return verifyRecord(deps, p, input, key);
}

function verifyRecord(deps: Deps, p: Principal, input: VerifyKeyInput, key: KeyRecord | undefined): Answer<VerifyOutcome> {
  // Another workspace's key, a deleted key or API, and a key of an API this root
  // key may not verify all look the same: the caller learns nothing about it.
  if (
    key === undefined ||
    key.workspaceId !== p.workspaceId ||
    !(covers(p.permissions, "apis.*.verify_key") || covers(p.permissions, verifyGrantOf(key.apiId)))
  ) {
    deps.analytics.verification({
      requestId: p.origin?.requestId ?? "",
      time: deps.clock.now(),
      workspaceId: p.workspaceId,
      keySpaceId: "",
      apiId: "",
      keyId: "",
      identityId: "",
      externalId: "",
      outcome: "NOT_FOUND",
      region: deps.region,
      tags: input.tags,
      spentCredits: 0,
    });
    return NOT_FOUND;
  }

  // A malformed query is the caller's error whatever the key's state (docs/permissions.md,
  // "The permission query of `keys.verifyKey`").
  const query: Query | undefined = input.permissions === undefined ? undefined : parseQueryCached(input.permissions);

  const now = deps.clock.now();
  if (!key.enabled) return refuse(deps, p, input, key, now, "DISABLED");
  if (key.expires !== undefined && now > key.expires) return refuse(deps, p, input, key, now, "EXPIRED");
  if (query !== undefined && !evaluateQuery(query, key.permissions)) return refuse(deps, p, input, key, now, "INSUFFICIENT_PERMISSIONS");

  // The hot case, a key without limits or credits: its outcome with no closure, map or array made for it.
  const noLimits = input.ratelimits.length === 0 && key.ratelimits.length === 0 && (key.identity?.ratelimits.length ?? 0) === 0;
  if (noLimits && !key.limitedCredits) return outcome(deps, p, input, key, now, "VALID", undefined, NO_LIMITS, 0);
  return limitsAndCredits(deps, p, input, key, now, noLimits);
}

/**
 * Rate limits, then credits. The in-process limiter answers at once, and a key
 * without credits then needs nothing that waits: its outcome is a value.
 */
function limitsAndCredits(deps: Deps, p: Principal, input: VerifyKeyInput, key: KeyRecord, now: number, noLimits: boolean): Answer<VerifyOutcome> {
  const plan = noLimits ? NO_PLAN : ratelimitChecks(key, input.ratelimits);
  if (plan.checks.length === 0) return credits(deps, p, input, key, now, NO_LIMITS);
  return andThen(deps.limiter.check(plan.checks, now), (results) => afterLimits(deps, p, input, key, now, plan.configs, results));
}

function afterLimits(
  deps: Deps,
  p: Principal,
  input: VerifyKeyInput,
  key: KeyRecord,
  now: number,
  configs: readonly RatelimitConfig[],
  results: LimitResult[],
): Answer<VerifyOutcome> {
  const outcomes = configs.map((config, i) => {
    const r = results[i] as LimitResult;
    return {
      id: config.id,
      name: config.name,
      limit: config.limit,
      duration: config.duration,
      reset: r.reset,
      remaining: r.remaining,
      exceeded: !r.passed,
      autoApply: config.autoApply,
    };
  });
  if (outcomes.some((o) => o.exceeded)) return refuse(deps, p, input, key, now, "RATE_LIMITED", outcomes);
  return credits(deps, p, input, key, now, outcomes);
}

/** The credits stage: nothing to do for a key without credits; a spend (or a read, at cost 0) otherwise. */
function credits(deps: Deps, p: Principal, input: VerifyKeyInput, key: KeyRecord, now: number, outcomes: RatelimitOutcome[]): Answer<VerifyOutcome> {
  if (!key.limitedCredits) return outcome(deps, p, input, key, now, "VALID", undefined, outcomes, 0);
  return spend(deps, p, input, key, now, outcomes);
}

async function spend(deps: Deps, p: Principal, input: VerifyKeyInput, key: KeyRecord, now: number, outcomes: RatelimitOutcome[]): Promise<VerifyOutcome> {
  const result = (code: Exclude<VerifyCode, "NOT_FOUND">, credits: number | undefined, spentCredits = 0) =>
    outcome(deps, p, input, key, now, code, credits, outcomes, spentCredits);
  // Every record with a refill has lastRefillAt (toRecord); were one without it, `?? now` would grant nothing rather than a refill.
  if (key.refill !== undefined && refillDue(key.refill, key.lastRefillAt ?? now, now)) {
    await applyRefill(deps.pool, key.id, currentRefillPeriodStart(key.refill, now), now);
    key.lastRefillAt = now;
  }
  const cost = input.credits?.cost ?? 1;
  if (cost === 0) return result("VALID", await readCredits(deps.pool, key.id));
  const spent = await deps.credits.spend(key.id, cost);
  if (spent.ok) return result("VALID", spent.remaining, spent.remaining === undefined ? 0 : cost);
  // No balance at all means the key became unlimited since it was cached.
  if (spent.remaining === undefined) return result("VALID", undefined);
  return result("USAGE_EXCEEDED", spent.remaining);
}

/** The limiter's check of one of the key's (or its identity's) limits. */
function limitCheck(key: KeyRecord, config: RatelimitConfig, scope: "key" | "identity", cost: number): LimitCheck {
  // A key linked to an identity has its counters beside the identity's on a Redis
  // Cluster: its limits and its identity's are then checked in one script call,
  // atomically, in one round trip (docs/ratelimits.md). Built only when a limit is checked.
  const slotTag = key.identity === undefined ? undefined : `${key.workspaceId}|identity|${key.identity.id}`;
  return { key: limitKey(key, config, scope), limit: config.limit, duration: config.duration, cost, slotTag };
}

/** A limit's counter identity: workspace, scope, name and owner (the key, or its identity). */
const limitKey = (key: KeyRecord, config: RatelimitConfig, scope: "key" | "identity"): string =>
  `${key.workspaceId}|${scope}|${config.name}|${scope === "key" ? key.id : (key.identity?.id as string)}`;

/**
 * limitCheck's check made to be kept: the counter's name as one flat string and
 * the key a slice of it (a string joined from parts is a tree of one node a
 * part, until it is flattened, and then the flat copy besides), and the slot
 * tag kept only once a record. Two limits' checks kept with their strings as
 * joined (and a pair of objects a limit, lists grown by push) took 1,050 bytes
 * of heap over their record's 903; made so, 501 (record-size.test.ts).
 */
function keptCheck(key: KeyRecord, config: RatelimitConfig, scope: "key" | "identity", slotTag: string | undefined): LimitCheck {
  const { key: counterKey, counter } = keptCounter(limitKey(key, config, scope), config.duration);
  return { key: counterKey, limit: config.limit, duration: config.duration, cost: 1, slotTag, counter };
}

/**
 * Auto-applied limits of the key and its identity (merged by name, the key's
 * own winning), plus every limit the request names, at the request's cost.
 */
function ratelimitChecks(key: KeyRecord, requested: VerifyKeyInput["ratelimits"]): Plan {
  if (requested.length === 0) return autoLimits(key);
  const byName = new Map<string, { config: RatelimitConfig; scope: "key" | "identity" }>();
  for (const l of key.identity?.ratelimits ?? []) byName.set(l.name, { config: l, scope: "identity" });
  for (const l of key.ratelimits) byName.set(l.name, { config: l, scope: "key" });

  const planned = new Map<string, { config: RatelimitConfig; check: LimitCheck }>();
  const plan = (config: RatelimitConfig, scope: "key" | "identity", cost: number) => {
    planned.set(config.name, { config, check: limitCheck(key, config, scope, cost) });
  };
  for (const { config, scope } of byName.values()) if (config.autoApply) plan(config, scope, 1);
  for (const r of requested) {
    const cost = r.cost ?? 1;
    if (r.limit !== undefined && r.duration !== undefined) {
      plan({ id: "", name: r.name, limit: r.limit, duration: r.duration, autoApply: false }, "key", cost);
      continue;
    }
    const found = byName.get(r.name);
    if (found === undefined) {
      throw new AppError(
        "err:svc:application:precondition_failed",
        key.identity
          ? `ratelimit '${r.name}' was requested but does not exist for key '${key.id}' nor identity: '${key.identity.id}' external ID: '${key.identity.externalId}'`
          : `ratelimit '${r.name}' was requested but does not exist for key '${key.id}' and there is no identity connected`,
      );
    }
    plan(found.config, found.scope, cost);
  }
  const all = [...planned.values()];
  return { configs: all.map((c) => c.config), checks: all.map((c) => c.check) };
}

/** A verification's limits: the configs (for its answer) and the limiter's checks, in the same order. */
export interface Plan {
  configs: readonly RatelimitConfig[];
  checks: readonly LimitCheck[];
}

/**
 * A cached record's auto-applied limits, as checked when a verification names
 * none (the common case), made at its first such verification and kept for the
 * record's life: a record is replaced when its key, identity or limits change,
 * never changed in place (but for its refill time), so what the checks are made
 * of is fixed for it. Made anew for every verification, their strings were new
 * each time, for the limiter to flatten and hash in full; verifyLimit counted
 * x0.972 of the instructions a request with them kept a limit (bench/README.md).
 * keyRecordSize counts what they take. Nobody changes a plan or its checks.
 */
const autoPlans = new WeakMap<KeyRecord, Plan>();

/** The plan kept for a record (made now if it is not yet): exported for record-size.test.ts, which counts what it takes. */
export function autoLimits(key: KeyRecord): Plan {
  let plan = autoPlans.get(key);
  if (plan === undefined) autoPlans.set(key, (plan = autoPlan(key)));
  return plan;
}

/**
 * The auto-applied limits in the order the merge of ratelimitChecks gives them
 * (the identity's names first, with the key's config for a name both have, then
 * the key's other names), without its Maps and closure. A key's limit names are
 * unique, as are an identity's (ratelimits_key_name, ratelimits_identity_name in
 * migrations/0001_init.sql).
 */
function autoPlan(key: KeyRecord): Plan {
  const configs: RatelimitConfig[] = [];
  const scopes: Array<"key" | "identity"> = [];
  const inherited = key.identity?.ratelimits ?? NONE;
  for (const l of inherited) {
    const own = key.ratelimits.find((k) => k.name === l.name);
    const config = own ?? l;
    if (config.autoApply) {
      configs.push(config);
      scopes.push(own === undefined ? "identity" : "key");
    }
  }
  for (const l of key.ratelimits) {
    if (l.autoApply && !inherited.some((i) => i.name === l.name)) {
      configs.push(l);
      scopes.push("key");
    }
  }
  if (configs.length === 0) return NO_PLAN;
  const slotTag = key.identity === undefined ? undefined : flat(`${key.workspaceId}|identity|${key.identity.id}`);
  const checks = configs.map((config, i) => keptCheck(key, config, scopes[i] as "key" | "identity", slotTag));
  // The key's own list when that is what it comes to (most keys with limits), else one of its own length (a list grown by push keeps room for 17).
  return { configs: configs.length === key.ratelimits.length && inherited.length === 0 ? key.ratelimits : configs.slice(), checks };
}
