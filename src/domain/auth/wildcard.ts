// A granted string containing `*` is an anchored glob in which `*` matches any
// run of characters, dots included (docs/permissions.md, "Wildcards"). The same
// rule authorises root keys (`apis.*.create_key`, `*`) and end-user permission
// queries (`documents.*`). Everything else in a grant is literal.
//
// Matching is a linear-backtracking scan, never a regular expression: a grant
// such as `a*a*a*…c` must not be able to stall the process (a regex would).

/** Whether `grant` covers `wanted` (an exact match, or a glob match when grant has `*`). */
export function grantCovers(grant: string, wanted: string): boolean {
  if (grant === wanted) return true;
  if (!grant.includes("*")) return false;
  return wildcardMatches(grant, wanted);
}

export function anyGrantCovers(grants: readonly string[], wanted: string): boolean {
  for (const g of grants) if (grantCovers(g, wanted)) return true;
  return false;
}

/**
 * Whether `pattern` matches all of `text`: `*` matches any run of characters
 * (none included), every other character is literal. Greedy matching with one
 * backtrack point, O(pattern × text) at worst: no regular expression, so a
 * pattern full of stars cannot blow up.
 */
export function wildcardMatches(pattern: string, text: string): boolean {
  const p = [...pattern];
  const t = [...text];
  let pi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < t.length) {
    if (pi < p.length && p[pi] !== "*" && p[pi] === t[ti]) {
      pi++;
      ti++;
    } else if (pi < p.length && p[pi] === "*") {
      star = pi++;
      mark = ti;
    } else if (star >= 0) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === "*") pi++;
  return pi === p.length;
}
