// A granted string containing `*` is an anchored glob in which `*` matches any
// run of characters, dots included (contract §0.1 decision 4, §5.5). The same
// rule authorises root keys (`apis.*.create_key`, `*`) and end-user permission
// queries (`documents.*`). Everything else in a grant is literal.

const compiled = new Map<string, RegExp>();

function toRegExp(grant: string): RegExp {
  let re = compiled.get(grant);
  if (re === undefined) {
    const body = grant
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    re = new RegExp(`^${body}$`, "s");
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(grant, re);
  }
  return re;
}

/** Whether `grant` covers `wanted` (an exact match, or a glob match when grant has `*`). */
export function grantCovers(grant: string, wanted: string): boolean {
  if (grant === wanted) return true;
  if (!grant.includes("*")) return false;
  return toRegExp(grant).test(wanted);
}

export function anyGrantCovers(grants: readonly string[], wanted: string): boolean {
  for (const g of grants) if (grantCovers(g, wanted)) return true;
  return false;
}
