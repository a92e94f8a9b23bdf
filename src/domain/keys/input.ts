// Validation of the key fields shared by createKey, updateKey and identities.

import { newId } from "../../core/ids.js";
import type { RatelimitConfig, Refill } from "../../core/records.js";
import { EXTERNAL_ID_PATTERN, ID_PATTERN, limits, MAX_SAFE, SLUG_PATTERN } from "../limits.js";
import type { Validator } from "../validate.js";

export interface RatelimitInput {
  name: string;
  limit: number;
  duration: number;
  autoApply?: boolean | undefined;
}

export interface RefillInput {
  interval: string;
  amount: number;
  refillDay?: number | undefined;
}

export interface CreditsInput {
  remaining?: number | undefined;
  refill?: RefillInput | undefined;
}

export const validateKeyId = (v: Validator, keyId: string): void =>
  v.required("keyId", keyId, { ...limits.resourceId, pattern: ID_PATTERN, patternText: "^[a-zA-Z0-9_]+$" });

export const validateExternalId = (v: Validator, field: string, externalId: string | undefined): void =>
  v.string(field, externalId, { ...limits.externalId, pattern: EXTERNAL_ID_PATTERN, patternText: "^[a-zA-Z0-9_.-]+$" });

/** How deep a JSON value nests below its top (0 for a scalar), counted without recursion and only up to `max + 1`. */
function depthOf(value: unknown, max: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next !== undefined && deepest <= max; next = stack.pop()) {
    const [v, d] = next;
    deepest = Math.max(deepest, d);
    if (typeof v === "object" && v !== null) for (const x of Object.values(v)) stack.push([x, d + 1]);
  }
  return deepest;
}

export function validateMeta(v: Validator, field: string, meta: Record<string, unknown> | undefined): string | undefined {
  if (meta === undefined) return undefined;
  // The JSON gateway refuses deeper documents before they get here; gRPC and Connect callers meet the same bound.
  if (depthOf(meta, limits.metaDepth) > limits.metaDepth) {
    v.add(field, `${field} nests deeper than ${limits.metaDepth} levels.`);
    return undefined;
  }
  const text = JSON.stringify(meta);
  if (Object.keys(meta).length > limits.metaProperties) {
    v.add(field, `${field} must have at most ${limits.metaProperties} properties (got ${Object.keys(meta).length}).`);
  } else if (Buffer.byteLength(text) > limits.metaBytes) {
    v.add(
      field,
      `${field} must be at most 1 MB when serialised (got ${Buffer.byteLength(text)} bytes).`,
      "Keep meta under 10 KB: it is returned on every verification.",
    );
  }
  return text;
}

export function validateRoles(v: Validator, field: string, roles: readonly string[]): void {
  v.items(field, roles, { maxItems: limits.roles.maxItems, min: 1, max: 100, pattern: SLUG_PATTERN, patternText: "^[a-zA-Z0-9_:\\-\\.\\*]+$" });
}

export function validatePermissions(v: Validator, field: string, permissions: readonly string[]): void {
  // Slugs are unique in a column whose collation ignores trailing spaces: `a ` would be stored as `a`'s twin.
  v.items(field, permissions, { maxItems: limits.permissions.maxItems, min: 1, max: 100, noTrailingSpace: true });
}

/** Validates rate-limit configs and gives them ids; autoApply defaults to true (docs/ratelimits.md, "Limits on keys and identities (verifyKey)"). */
export function validateRatelimits(v: Validator, field: string, list: readonly RatelimitInput[], now: number): RatelimitConfig[] {
  if (list.length > limits.ratelimits.maxItems) {
    v.add(field, `${field} must have at most ${limits.ratelimits.maxItems} items (got ${list.length}).`);
    return [];
  }
  const seen = new Set<string>();
  list.forEach((r, i) => {
    const f = `${field}[${i}]`;
    v.required(`${f}.name`, r.name, limits.ratelimitName);
    v.number(`${f}.limit`, r.limit, { min: 1, max: MAX_SAFE });
    v.number(`${f}.duration`, r.duration, { min: limits.ratelimitDuration.min, max: MAX_SAFE });
    // Names are unique per owner; the database's collation ignores trailing spaces, so compare without them.
    const unique = r.name.replace(/ +$/, "");
    if (seen.has(unique)) v.add(`${f}.name`, `Ratelimit with name '${r.name}' is already defined in the request.`);
    seen.add(unique);
  });
  return list.map((r) => ({ id: newId("rl", now), name: r.name, limit: r.limit, duration: r.duration, autoApply: r.autoApply ?? true }));
}

export function validateRefill(v: Validator, field: string, refill: RefillInput, opts: { dailyDayIsError: boolean }): Refill {
  if (refill.interval !== "daily" && refill.interval !== "monthly") {
    v.add(`${field}.interval`, `${field}.interval must be "daily" or "monthly" (got ${JSON.stringify(refill.interval)}).`);
  }
  if (refill.amount < 1 || refill.amount > MAX_SAFE) v.add(`${field}.amount`, `${field}.amount must be between 1 and ${MAX_SAFE}.`);
  if (refill.refillDay !== undefined && (refill.refillDay < 1 || refill.refillDay > 31)) {
    v.add(`${field}.refillDay`, `${field}.refillDay must be between 1 and 31 (got ${refill.refillDay}).`);
  }
  if (refill.interval === "daily" && refill.refillDay !== undefined && opts.dailyDayIsError) {
    v.add(`${field}.refillDay`, "`refillDay` must not be provided when the refill interval is `daily`.");
  }
  // Monthly without a day refills on the 1st (docs/ratelimits.md, "Credits").
  return { amount: refill.amount, day: refill.interval === "monthly" ? (refill.refillDay ?? 1) : undefined };
}

/** createKey's credits: remaining (null/absent = unlimited) and an optional refill that needs a balance. */
export function validateCredits(
  v: Validator,
  credits: CreditsInput | undefined,
  field = "credits",
): { remaining: number | undefined; refill: Refill | undefined } {
  if (credits === undefined) return { remaining: undefined, refill: undefined };
  if (credits.remaining !== undefined && (credits.remaining < 0 || credits.remaining > MAX_SAFE)) {
    v.add(`${field}.remaining`, `${field}.remaining must be between 0 and ${MAX_SAFE} (got ${credits.remaining}).`);
  }
  let refill: Refill | undefined;
  if (credits.refill !== undefined) {
    refill = validateRefill(v, `${field}.refill`, credits.refill, { dailyDayIsError: false });
    if (credits.remaining === undefined) {
      v.add(`${field}.remaining`, `\`${field}.remaining\` must be provided when \`${field}.refill\` is set.`);
    }
  }
  return { remaining: credits.remaining, refill };
}
