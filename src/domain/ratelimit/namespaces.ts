// Rate-limit namespaces: addressed by name or id, created on first use by
// ratelimit.limit/multiLimit. Permission strings always name the namespace by
// its id (`ratelimit.rlns_….limit`), never by its name (docs/permissions.md,
// "Grants: `resource.resourceId.action`").
//
// ratelimit.limit reads namespaces and override candidates through in-process
// caches (tagged by namespace id); every override change evicts its namespace's
// entries here at once and on other instances through the invalidation log, so
// the next request sees it (docs/caching.md). Unknown namespaces are not cached: the
// first use creates them.
import { MISS } from "../../cache/verification-cache.js";
import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { flat } from "../../storage/memory-limiter.js";
import { findNamespace, insertNamespace, type NamespaceRow } from "../../storage/ratelimit.js";
import { audited } from "../audit/audit.js";
import { holdsSomeGrantFor, type Principal, requireAny, requireSomeGrantFor } from "../auth/principal.js";
import type { Deps } from "../deps.js";

export type { NamespaceRow };

/** A namespace's name, as the dashboard creates it: 1 to 512 characters, as ratelimit.limit's `namespace` (docs/ratelimits.md). */
export const NAMESPACE_RULE = { min: 1, max: 512, noTrailingSpace: true } as const;

/** `ratelimit.*.<action>` or `ratelimit.<namespaceId>.<action>`. */
export const namespacePermission = (namespaceId: string, action: string): string[] => [`ratelimit.*.${action}`, `ratelimit.${namespaceId}.${action}`];

export const mayActOnSomeNamespace = (p: Principal, action: string): boolean => holdsSomeGrantFor(p, "ratelimit", action);

export function requireSomeNamespaceGrant(p: Principal, action: string): void {
  requireSomeGrantFor(p, "ratelimit", action, "namespaceId");
}

export const namespaceNotFound = (): AppError => new AppError("err:svc:data:ratelimit_namespace_not_found");
export const namespaceGone = (): AppError => new AppError("err:svc:data:ratelimit_namespace_gone");

/**
 * The namespace cache's keys, `<workspace>|<ref>`, one flat copy kept for each
 * pair whose namespace the cache holds. Joined anew for every ratelimit.limit,
 * the key was a new string a request that the cache's Map flattened and hashed
 * in full, as the limiter's counter was (memory-limiter.ts); a kept copy is
 * hashed once (the request's `ref` is still hashed for the lookup here, a
 * shorter string). Counted with bench:ab: ratelimit.limit x0.974 and x0.985 of
 * its instructions a request (~138 thousand), bench/README.md. Only namespaces the cache
 * holds are kept, so names that exist nowhere cost nothing here; refs longer
 * than KEPT_REF_CHARS are not kept (names may be 512 characters); at most
 * KEPT_KEYS pairs are kept, then all are forgotten and kept again as they come:
 * ~6 MB at most.
 */
const keptKeys = new Map<string, Map<string, string>>();
let keptCount = 0;
const KEPT_KEYS = 10_000;
const KEPT_REF_CHARS = 128;

/** The namespace cache's key, kept from now on (unless `ref` is too long to keep). */
export function keepNamespaceKey(workspaceId: string, ref: string): string {
  let refs = keptKeys.get(workspaceId);
  let key = refs?.get(ref);
  if (key !== undefined) return key;
  if (ref.length > KEPT_REF_CHARS) return `${workspaceId}|${ref}`;
  if (keptCount >= KEPT_KEYS) {
    keptKeys.clear();
    keptCount = 0;
    refs = undefined;
  }
  if (refs === undefined) keptKeys.set(workspaceId, (refs = new Map()));
  key = flat(`${workspaceId}|${ref}`);
  refs.set(ref, key);
  keptCount++;
  return key;
}

/** How many pairs are kept now, counted in the maps themselves (for the test of the bound). */
export function namespaceKeysKept(): number {
  let n = 0;
  for (const refs of keptKeys.values()) n += refs.size;
  return n;
}

/** The namespace of this name or id in the workspace, if the cache holds it. */
export function cachedNamespaceNow(deps: Deps, workspaceId: string, ref: string): NamespaceRow | undefined {
  const kept = keptKeys.get(workspaceId)?.get(ref);
  const hit = deps.namespaceCache.get(kept ?? `${workspaceId}|${ref}`);
  if (hit === undefined || hit === MISS) return undefined;
  // Held by the cache but forgotten here (past KEPT_KEYS): kept again.
  if (kept === undefined && ref.length <= KEPT_REF_CHARS) keepNamespaceKey(workspaceId, ref);
  return hit;
}

async function cachedNamespace(deps: Deps, workspaceId: string, ref: string): Promise<NamespaceRow | undefined> {
  const hit = cachedNamespaceNow(deps, workspaceId, ref);
  if (hit !== undefined) return hit;
  const version = deps.namespaceCache.version;
  const ns = await findNamespace(deps.pool, workspaceId, ref);
  if (ns === undefined) return undefined;
  deps.namespaceCache.setRead(version, keepNamespaceKey(workspaceId, ref), ns, [`ns:${ns.id}`]);
  return ns;
}

/** A limit request on an existing namespace: `limit` on it, then 410 when it is deleted. */
export function requireLimitOn(p: Principal, ns: NamespaceRow): void {
  requireAny(p, namespacePermission(ns.id, "limit"));
  if (ns.deletedAt !== undefined) throw namespaceGone();
}

/** A live namespace for the override operations: unknown and deleted both read as missing. */
export async function findLiveNamespace(deps: Deps, p: Principal, ref: string): Promise<NamespaceRow | undefined> {
  const ns = await findNamespace(deps.pool, p.workspaceId, ref);
  return ns === undefined || ns.deletedAt !== undefined ? undefined : ns;
}

/**
 * The namespaces named by a limit request, after the permission checks: each
 * needs `limit` on it; a missing one is created, which also needs
 * `ratelimit.*.create_namespace`; a deleted one is 410. Nothing is created
 * unless every check passed, so a refused multiLimit leaves no namespace behind.
 */
export async function namespacesForLimit(deps: Deps, p: Principal, refs: readonly string[]): Promise<Map<string, NamespaceRow>> {
  const now = deps.clock.now();
  const unique = [...new Set(refs)];
  const found = await Promise.all(unique.map((ref) => cachedNamespace(deps, p.workspaceId, ref)));
  const missing: Array<{ ref: string; id: string }> = [];
  const out = new Map<string, NamespaceRow>();
  unique.forEach((ref, i) => {
    const ns = found[i];
    if (ns === undefined) {
      const id = newId("rlns", now);
      requireAny(p, ["ratelimit.*.create_namespace"]);
      requireAny(p, namespacePermission(id, "limit"));
      missing.push({ ref, id });
    } else {
      requireAny(p, namespacePermission(ns.id, "limit"));
      out.set(ref, ns);
    }
  });
  for (const ns of out.values()) if (ns.deletedAt !== undefined) throw namespaceGone();
  // Only a first use gets here: a namespace that exists never opens a transaction.
  for (const m of missing) {
    const ns = await audited(
      deps,
      p,
      (conn) => insertNamespace(conn, { id: m.id, workspaceId: p.workspaceId, name: m.ref, now }),
      // Recorded only when this request made it, not when a concurrent one did first.
      (made) =>
        made.id === m.id
          ? {
              action: "ratelimit_namespace.create",
              resources: [{ type: "ratelimit_namespace", id: m.id }],
              description: "Created the namespace (name) on its first use by a limit request.",
            }
          : undefined,
    );
    // A concurrent request may have created (another) namespace of this name first.
    if (ns.id !== m.id) requireAny(p, namespacePermission(ns.id, "limit"));
    if (ns.deletedAt !== undefined) throw namespaceGone();
    out.set(m.ref, ns);
  }
  return out;
}
