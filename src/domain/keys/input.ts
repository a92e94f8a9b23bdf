// The key fields' rules that the protos cannot say, shared by createKey,
// updateKey, migrateKeys and identities. Bounds, patterns and item limits are
// declared on the proto fields and checked before the domain runs
// (services/field-rules.ts); what is left here compares fields with each other
// or measures meta.

import { newId } from "../../core/ids.js";
import type { RatelimitConfig, Refill } from "../../core/records.js";
import { limits } from "../limits.js";
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

/** Validates rate-limit configs and gives them ids; autoApply defaults to true (docs/ratelimits.md, "Limits on keys and identities (verifyKey)"). */
export function validateRatelimits(v: Validator, field: string, list: readonly RatelimitInput[], now: number): RatelimitConfig[] {
  const seen = new Set<string>();
  list.forEach((r, i) => {
    const f = `${field}[${i}]`;
    // Names are unique per owner, in a column whose collation ignores trailing spaces: compare without them.
    const unique = r.name.replace(/ +$/, "");
    if (seen.has(unique)) v.add(`${f}.name`, `Ratelimit with name '${r.name}' is already defined in the request.`);
    seen.add(unique);
  });
  return list.map((r) => ({ id: newId("rl", now), name: r.name, limit: r.limit, duration: r.duration, autoApply: r.autoApply ?? true }));
}

export function validateRefill(v: Validator, field: string, refill: RefillInput, opts: { dailyDayIsError: boolean }): Refill {
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
  let refill: Refill | undefined;
  if (credits.refill !== undefined) {
    refill = validateRefill(v, `${field}.refill`, credits.refill, { dailyDayIsError: false });
    if (credits.remaining === undefined) {
      v.add(`${field}.remaining`, `\`${field}.remaining\` must be provided when \`${field}.refill\` is set.`);
    }
  }
  return { remaining: credits.remaining, refill };
}
