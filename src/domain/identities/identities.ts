// identities.createIdentity, getIdentity, listIdentities, updateIdentity,
// deleteIdentity. Every operation but create and list
// addresses the identity by id or externalId, among live identities only.
// Identity rate limits are enforced by keys.verifyKey across all the identity's
// keys; every change here evicts those keys' cached records at once.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { RatelimitConfig } from "../../core/records.js";
import {
  DuplicateExternalId,
  findLiveIdentity,
  type IdentityRow,
  insertIdentity,
  listLiveIdentities,
  replaceIdentityRatelimits,
  softDeleteIdentity,
  touchIdentity,
  updateIdentityMeta,
} from "../../storage/identities.js";
import { insertRatelimits } from "../../storage/keys.js";
import { transaction } from "../../storage/sql.js";
import { audited, fieldList, writeAudit } from "../audit/audit.js";
import { type Principal, requireAny, requireSomeGrantFor } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { type RatelimitInput, validateMeta, validateRatelimits } from "../keys/input.js";
import { limits } from "../limits.js";
import { Validator } from "../validate.js";

export type { IdentityRow };

export const identityNotFound = (): AppError => new AppError("err:svc:data:identity_not_found");

/** `identity.*.<action>` or `identity.<identityId>.<action>`. */
export const identityPermission = (identityId: string, action: string): string[] => [`identity.*.${action}`, `identity.${identityId}.${action}`];

function requireSomeIdentityGrant(p: Principal, action: string): void {
  requireSomeGrantFor(p, "identity", action, "identityId");
}

/** Looks the identity up after the grant pre-check, then checks the grant on its id. */
async function authorisedIdentity(deps: Deps, p: Principal, ref: string, action: string): Promise<IdentityRow> {
  requireSomeIdentityGrant(p, action);
  // Ids and externalIds never end in a space, yet the collation would match `x ` to `x`: such a ref names nothing.
  const identity = / $/.test(ref) ? undefined : await findLiveIdentity(deps.pool, p.workspaceId, ref);
  if (identity === undefined) throw identityNotFound();
  requireAny(p, identityPermission(identity.id, action));
  return identity;
}

/** validateRatelimits, naming the other spelling when two names differ only in trailing spaces. */
function validateIdentityRatelimits(v: Validator, list: readonly RatelimitInput[], now: number): RatelimitConfig[] {
  const configs = validateRatelimits(v, "ratelimits", list, now);
  // The database compares names without trailing spaces: 'a' and 'a ' would collide there.
  const padded = new Map<string, string>();
  list.forEach((r, i) => {
    const base = r.name.replace(/ +$/, "");
    const other = padded.get(base);
    if (other !== undefined && other !== r.name) {
      v.add(`ratelimits[${i}].name`, `Ratelimit with name '${r.name}' is already defined in the request (as '${other}').`);
    }
    padded.set(base, r.name);
  });
  return configs;
}

export interface CreateIdentityInput {
  externalId: string;
  meta?: Record<string, unknown> | undefined;
  ratelimits: RatelimitInput[];
}

export async function createIdentity(deps: Deps, p: Principal, input: CreateIdentityInput): Promise<{ identityId: string }> {
  const now = deps.clock.now();
  const v = new Validator();
  const meta = validateMeta(v, "meta", input.meta) ?? "{}";
  const ratelimits = validateIdentityRatelimits(v, input.ratelimits, now);
  v.done();
  requireAny(p, ["identity.*.create_identity"]);
  const identityId = newId("id", now);
  try {
    await transaction(deps.pool, async (conn) => {
      await insertIdentity(conn, { id: identityId, workspaceId: p.workspaceId, externalId: input.externalId, meta, now });
      await insertRatelimits(conn, { workspaceId: p.workspaceId, identityId }, ratelimits, now);
      // Field names only: meta values and limit names are the customer's data.
      const fields = ["externalId", ...(input.meta === undefined ? [] : ["meta"]), ...(ratelimits.length > 0 ? ["ratelimits"] : [])];
      await writeAudit(conn, deps, p, {
        action: "identity.create",
        resources: [{ type: "identity", id: identityId }],
        description: `Created the identity with ${fieldList(fields)}.`,
      });
    });
  } catch (err) {
    if (err instanceof DuplicateExternalId) {
      throw new AppError("err:svc:data:identity_already_exists", `Identity with externalId '${input.externalId}' already exists in this workspace.`);
    }
    throw err;
  }
  return { identityId };
}

export async function getIdentity(deps: Deps, p: Principal, input: { identity: string }): Promise<IdentityRow> {
  return authorisedIdentity(deps, p, input.identity, "read_identity");
}

export interface ListIdentitiesInput {
  limit?: number | undefined;
  cursor?: string | undefined;
  search?: string | undefined;
}

export async function listIdentities(deps: Deps, p: Principal, input: ListIdentitiesInput): Promise<{ identities: IdentityRow[]; cursor: string | undefined }> {
  // The whole workspace is listed, so only the wildcard grant will do.
  requireAny(p, ["identity.*.read_identity"]);
  const page = await listLiveIdentities(deps.pool, {
    workspaceId: p.workspaceId,
    limit: input.limit ?? limits.pageSize.default,
    cursor: input.cursor,
    search: input.search,
  });
  return { identities: page.identities, cursor: page.next };
}

export interface UpdateIdentityInput {
  identity: string;
  /** Replaces the meta entirely; undefined keeps it. */
  meta?: Record<string, unknown> | undefined;
  /** Replaces the limits by name; undefined keeps them, [] removes them all. */
  ratelimits?: RatelimitInput[] | undefined;
}

export async function updateIdentity(deps: Deps, p: Principal, input: UpdateIdentityInput): Promise<IdentityRow> {
  const now = deps.clock.now();
  const v = new Validator();
  const meta = validateMeta(v, "meta", input.meta);
  const ratelimits = input.ratelimits === undefined ? undefined : validateIdentityRatelimits(v, input.ratelimits, now);
  v.done();
  const found = await authorisedIdentity(deps, p, input.identity, "update_identity");
  const updated = await transaction(deps.pool, async (conn) => {
    // Under the row lock, so concurrent updates apply one after the other.
    const current = await findLiveIdentity(conn, p.workspaceId, found.id, true);
    if (current === undefined || current.id !== found.id) throw identityNotFound();
    if (meta !== undefined) await updateIdentityMeta(conn, current.id, meta, now);
    else await touchIdentity(conn, current.id, now);
    if (ratelimits !== undefined) {
      await replaceIdentityRatelimits(conn, { workspaceId: p.workspaceId, identityId: current.id }, current.ratelimits, ratelimits, now);
    }
    const after = await findLiveIdentity(conn, p.workspaceId, current.id);
    if (after === undefined) throw identityNotFound();
    // A request that names no field only moves updatedAt: nothing to record.
    const fields = [...(meta === undefined ? [] : ["meta"]), ...(ratelimits === undefined ? [] : ["ratelimits"])];
    if (fields.length > 0) {
      await writeAudit(conn, deps, p, {
        action: "identity.update",
        resources: [{ type: "identity", id: current.id }],
        description: `Replaced the identity's ${fieldList(fields)}.`,
      });
    }
    return after;
  });
  // Keys linked to the identity must verify against its new limits at once.
  await deps.invalidate("identity", updated.id);
  return updated;
}

/**
 * Soft delete. Linked keys keep their identity_id but lose the identity (and its
 * limits): verification reads live identities only. The externalId is free at once.
 */
export async function deleteIdentity(deps: Deps, p: Principal, input: { identity: string }): Promise<void> {
  const identity = await authorisedIdentity(deps, p, input.identity, "delete_identity");
  const deleted = await audited(
    deps,
    p,
    (conn) => softDeleteIdentity(conn, identity.id, deps.clock.now()),
    (done) =>
      done
        ? {
            action: "identity.delete",
            resources: [{ type: "identity", id: identity.id }],
            description: "Deleted the identity; its keys lose it and its limits.",
          }
        : undefined,
  );
  if (!deleted) throw identityNotFound();
  await deps.invalidate("identity", identity.id);
}
