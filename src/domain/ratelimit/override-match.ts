// Which override applies to an identifier (docs/ratelimits.md, "Overrides"): the override whose
// identifier equals it (a literal pattern string included), otherwise the best
// `*` pattern that matches the whole identifier. "Best" must be deterministic:
// most literal (non-`*`) characters, then fewest `*`, then the oldest, then id.

import { wildcardMatches } from "../auth/wildcard.js";

export interface OverrideCandidate {
  id: string;
  identifier: string;
  createdAt: number;
}

export { wildcardMatches };

const stars = (s: string): number => {
  let n = 0;
  for (const c of s) if (c === "*") n++;
  return n;
};

/** Negative when a ranks before b. */
function compare(a: OverrideCandidate, b: OverrideCandidate): number {
  const sa = stars(a.identifier);
  const sb = stars(b.identifier);
  const la = [...a.identifier].length - sa;
  const lb = [...b.identifier].length - sb;
  if (la !== lb) return lb - la;
  if (sa !== sb) return sa - sb;
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The override that applies to `identifier`, or undefined when none does. */
export function bestOverride<T extends OverrideCandidate>(identifier: string, candidates: readonly T[]): T | undefined {
  const exact = candidates.find((c) => c.identifier === identifier);
  if (exact !== undefined) return exact;
  let best: T | undefined;
  for (const c of candidates) {
    if (!c.identifier.includes("*") || !wildcardMatches(c.identifier, identifier)) continue;
    if (best === undefined || compare(c, best) < 0) best = c;
  }
  return best;
}
