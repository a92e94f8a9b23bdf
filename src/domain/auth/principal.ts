import { AppError } from "../../core/errors.js";
import { anyGrantCovers, grantCovers } from "./wildcard.js";

/** Who is calling: a root key acting on its workspace. */
export interface Principal {
  workspaceId: string;
  rootKeyId: string;
  permissions: readonly string[];
  /** Where the call came from, for the audit log; set by the door that took the request. */
  origin?: RequestOrigin | undefined;
  /** When the calling root key expires, if it does: it can give no root key a later expiry. */
  expiresAt?: number | undefined;
}

/** The request a change came in with, as its audit record names it (TRUST_PROXY decides the address). */
export interface RequestOrigin {
  requestId: string;
  remoteAddress: string | undefined;
  userAgent: string | undefined;
}

// Decisions per grant list (one list object per cached root key), so a hot root
// key answers "may it X?" from a map instead of matching globs every request.
const decisions = new WeakMap<readonly string[], Map<string, boolean>>();

/** Whether these grants cover the wanted permission (memoised per grant list). */
export function covers(grants: readonly string[], wanted: string): boolean {
  let memo = decisions.get(grants);
  if (memo === undefined) decisions.set(grants, (memo = new Map()));
  let yes = memo.get(wanted);
  if (yes === undefined) {
    yes = anyGrantCovers(grants, wanted);
    if (memo.size > 10_000) memo.clear();
    memo.set(wanted, yes);
  }
  return yes;
}

/** Whether the principal holds any of the wanted permissions. */
export function holdsAny(p: Principal, wanted: readonly string[]): boolean {
  for (const w of wanted) if (covers(p.permissions, w)) return true;
  return false;
}

// By resource, then action: both are constants of their call sites, so finding
// the answer builds no string (a `resource.action` key was one per request).
const someGrant = new WeakMap<readonly string[], Map<string, Map<string, boolean>>>();

/**
 * Whether some grant could allow `action` on some resource of this kind (any id).
 * Used to answer 403 before a lookup to a key that could never be allowed, so it
 * cannot probe which resources exist; a key with such a grant is then checked
 * exactly once the resource's id is known.
 */
export function holdsSomeGrantFor(p: Principal, resource: string, action: string): boolean {
  let byResource = someGrant.get(p.permissions);
  if (byResource === undefined) someGrant.set(p.permissions, (byResource = new Map()));
  let memo = byResource.get(resource);
  if (memo === undefined) byResource.set(resource, (memo = new Map()));
  let yes = memo.get(action);
  if (yes === undefined) {
    yes = p.permissions.some(
      (g) => grantCovers(g, `${resource}.\u0000.${action}`) || (g.startsWith(`${resource}.`) && (g.endsWith(`.${action}`) || g.endsWith("*"))),
    );
    memo.set(action, yes);
  }
  return yes;
}

/** Throws 403 naming both grant forms unless some grant could allow the action. */
export function requireSomeGrantFor(p: Principal, resource: string, action: string, idName: string): void {
  if (holdsSomeGrantFor(p, resource, action)) return;
  throw new AppError(
    "err:svc:authorization:insufficient_permissions",
    `Missing one of these permissions: '${resource}.*.${action}' or '${resource}.<${idName}>.${action}'`,
  );
}

/** Throws 403 naming the permissions needed unless the principal holds one of them. */
export function requireAny(p: Principal, wanted: readonly string[]): void {
  if (holdsAny(p, wanted)) return;
  throw new AppError(
    "err:svc:authorization:insufficient_permissions",
    wanted.length === 1 ? `Missing permission: '${wanted[0]}'` : `Missing one of these permissions: ${wanted.map((w) => `'${w}'`).join(" or ")}`,
  );
}

/** `apis.*.<action>` or `apis.<apiId>.<action>`. */
export const apiPermission = (apiId: string, action: string): string[] => [`apis.*.${action}`, `apis.${apiId}.${action}`];
