// ratelimit.setOverride, getOverride, listOverrides, deleteOverride
// (docs/ratelimits.md, "Overrides"). ratelimit.limit reads overrides through
// deps.overrideCache; every change here evicts the namespace's entries before
// answering (deps.invalidate), so the very next limit call on this instance sees
// it, and other instances at their next poll of the invalidation log (docs/caching.md).

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { findLiveOverride, findOverrideCandidates, listLiveOverrides, type OverrideRow, softDeleteOverride, upsertOverride } from "../../storage/ratelimit.js";
import { type AuditResource, audited } from "../audit/audit.js";
import { holdsAny, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { findLiveNamespace, namespaceNotFound, namespacePermission, requireSomeNamespaceGrant } from "./namespaces.js";
import { bestOverride } from "./override-match.js";

export type { OverrideRow };

/** The one 404 for every way of not finding an override, always with this detail text. */
export const overrideNotFound = (): AppError =>
  new AppError("err:svc:data:ratelimit_override_not_found", "The requested rate limit override could not be found");

/** listOverrides' page size when none is asked for (its bounds are on the proto field). */
export const OVERRIDES_PAGE_DEFAULT = 10;

const overrideResources = (overrideId: string, namespaceId: string): AuditResource[] => [
  { type: "ratelimit_override", id: overrideId },
  { type: "ratelimit_namespace", id: namespaceId },
];

interface OverrideRef {
  namespace: string;
  identifier: string;
}

export interface SetOverrideInput extends OverrideRef {
  limit: number;
  duration: number;
}

/** Upsert on (namespace, identifier): a re-set keeps the override's id. The namespace must exist. */
export async function setOverride(deps: Deps, p: Principal, input: SetOverrideInput): Promise<{ overrideId: string }> {
  requireSomeNamespaceGrant(p, "set_override");
  const ns = await findLiveNamespace(deps, p, input.namespace);
  if (ns === undefined) throw namespaceNotFound();
  requireAny(p, namespacePermission(ns.id, "set_override"));
  const now = deps.clock.now();
  const set = await audited(
    deps,
    p,
    (conn) =>
      upsertOverride(conn, {
        id: newId("rlor", now),
        workspaceId: p.workspaceId,
        namespaceId: ns.id,
        identifier: input.identifier,
        limit: input.limit,
        duration: input.duration,
        now,
      }),
    (r) => ({
      action: "ratelimit_override.set",
      resources: overrideResources(r.id, ns.id),
      // The identifier is the customer's (often a user id or an address): named by the override's id only.
      description: r.created ? "Created the override with limit and duration." : "Set the override's limit and duration.",
    }),
  );
  await deps.invalidate("namespace", ns.id);
  return { overrideId: set.id };
}

/**
 * The override that applies to the identifier: exact first, then the best
 * wildcard match. Every way of not finding it is the same 404: unknown or
 * deleted namespace, no override, and a missing read grant too (no 403), so a
 * caller cannot probe which namespaces or overrides exist (docs/auth.md, "401 or 403").
 */
export async function getOverride(deps: Deps, p: Principal, input: OverrideRef): Promise<OverrideRow> {
  const ns = await findLiveNamespace(deps, p, input.namespace);
  if (ns === undefined || !holdsAny(p, namespacePermission(ns.id, "read_override"))) throw overrideNotFound();
  const found = bestOverride(input.identifier, await findOverrideCandidates(deps.pool, ns.id, input.identifier));
  if (found === undefined) throw overrideNotFound();
  return found;
}

export interface ListOverridesInput {
  namespace: string;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export async function listOverrides(deps: Deps, p: Principal, input: ListOverridesInput): Promise<{ overrides: OverrideRow[]; cursor: string | undefined }> {
  requireSomeNamespaceGrant(p, "read_override");
  const ns = await findLiveNamespace(deps, p, input.namespace);
  if (ns === undefined) throw namespaceNotFound();
  requireAny(p, namespacePermission(ns.id, "read_override"));
  const page = await listLiveOverrides(deps.pool, { namespaceId: ns.id, limit: input.limit ?? OVERRIDES_PAGE_DEFAULT, cursor: input.cursor });
  return { overrides: page.overrides, cursor: page.next };
}

/** Matched exactly (no wildcard resolution, unlike getOverride); a soft delete. */
export async function deleteOverride(deps: Deps, p: Principal, input: OverrideRef): Promise<void> {
  requireSomeNamespaceGrant(p, "delete_override");
  // An unknown or deleted namespace has no override to delete: it is reported as a
  // missing override, not namespace_not_found (docs/errors.md, "Codes").
  const ns = await findLiveNamespace(deps, p, input.namespace);
  if (ns === undefined) throw overrideNotFound();
  requireAny(p, namespacePermission(ns.id, "delete_override"));
  const found = await findLiveOverride(deps.pool, ns.id, input.identifier);
  if (found === undefined) throw overrideNotFound();
  const deleted = await audited(
    deps,
    p,
    (conn) => softDeleteOverride(conn, found.id, deps.clock.now()),
    (done) => (done ? { action: "ratelimit_override.delete", resources: overrideResources(found.id, ns.id), description: "Deleted the override." } : undefined),
  );
  if (!deleted) throw overrideNotFound();
  await deps.invalidate("namespace", ns.id);
}
