// keys.addPermissions, removePermissions, setPermissions, addRoles, removeRoles
// and setRoles (docs/permissions.md, "Which operation needs which grant").
//
// One rule for all six: the root key needs
// `apis.*.update_key` or `apis.<apiId>.update_key`, plus the rbac grant of what
// the call does to the key: adding needs `rbac.*.add_permission_to_key` /
// `rbac.*.add_role_to_key`, removing needs the matching `remove_…_from_key`, and
// a set does both. Adding or setting a slug the workspace does not have yet also
// needs `rbac.*.create_permission`. That is stricter than Unkey, whose
// removeRoles and setRoles ask for update_key only.
//
// Order of checks: body (400), the key (404), update_key and the rbac grant
// (403), then the named permissions or roles (404, or 403 for create_permission
// once a slug turns out to be new); so a root key without the rbac grant cannot
// probe which slugs or roles exist. Every change evicts the key before answering,
// so the very next verification on this instance sees it (docs/caching.md), and
// writes its audit record in the transaction that holds the key's lock.

import { AppError } from "../../core/errors.js";
import type { KeyDetails } from "../../core/records.js";
import {
  keyPermissionIds,
  keyRoleIds,
  linkPermissionSlugs,
  listKeyPermissions,
  listKeyRoles,
  lockLiveKey,
  lockRolesByName,
  missingPermissionSlugs,
  type PermissionRow,
  type RoleRow,
  unlinkPermissionSlugs,
  unlinkPermissionsExcept,
  unlinkRoles,
  unlinkRolesExcept,
} from "../../storage/key-grants.js";
import { findLiveKeyById } from "../../storage/keys.js";
import { ensurePermissions, linkRoles } from "../../storage/relations.js";
import type { Queryable } from "../../storage/sql.js";
import { type AuditAction, type AuditEvent, auditCreatedOnUse, audited } from "../audit/audit.js";
import { apiPermission, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { keyNotFound, roleNotFound } from "./keys.js";

export type { PermissionRow, RoleRow };

export interface PermissionsInput {
  keyId: string;
  permissions: readonly string[];
}

export interface RolesInput {
  keyId: string;
  roles: readonly string[];
}

const RBAC = {
  addPermission: "rbac.*.add_permission_to_key",
  removePermission: "rbac.*.remove_permission_from_key",
  createPermission: "rbac.*.create_permission",
  addRole: "rbac.*.add_role_to_key",
  removeRole: "rbac.*.remove_role_from_key",
} as const;

export const permissionNotFound = (slug: string): AppError => new AppError("err:svc:data:permission_not_found", `Permission '${slug}' was not found.`);

// The lists' bounds are on the proto fields (keys_service.proto): setPermissions
// keeps addPermissions' 1,000 items although Unkey sets none, so one request
// cannot build an unbounded IN list.
const distinct = (list: readonly string[]): string[] => [...new Set(list)];

/** The live key of the caller's workspace, or 404 (another workspace's key reads as missing). */
async function loadKey(deps: Deps, p: Principal, keyId: string): Promise<KeyDetails> {
  const key = await findLiveKeyById(deps.pool, p.workspaceId, keyId);
  if (!key) throw keyNotFound();
  return key;
}

/** What a grant change did: the ids attached before it, and the rows attached after. */
interface Changed<T> {
  before: readonly string[];
  after: T[];
}

/**
 * Runs fn with the key row locked, and writes its audit record in the same
 * transaction; 404 when the key was deleted since it was loaded. The record
 * names the ids added and removed, read under the lock (one more indexed SELECT
 * of the key's links): a call that changes nothing (adding what is attached,
 * removing what is not) writes no record.
 */
async function withLockedKey<T extends { id: string }>(
  deps: Deps,
  p: Principal,
  key: KeyDetails,
  action: AuditAction,
  kind: "permission" | "role",
  fn: (conn: Queryable) => Promise<Changed<T>>,
): Promise<T[]> {
  const done = await audited(
    deps,
    p,
    async (conn) => {
      if (!(await lockLiveKey(conn, key.id))) throw keyNotFound();
      return fn(conn);
    },
    ({ before, after }) => grantEvent(action, key, kind, before, after),
  );
  return done.after;
}

function grantEvent(
  action: AuditAction,
  key: KeyDetails,
  kind: "permission" | "role",
  before: readonly string[],
  after: readonly { id: string }[],
): AuditEvent | undefined {
  const had = new Set(before);
  const has = new Set(after.map((x) => x.id));
  const added = [...has].filter((id) => !had.has(id));
  const removed = [...had].filter((id) => !has.has(id));
  if (added.length === 0 && removed.length === 0) return undefined;
  const count = (n: number) => `${n} ${kind}${n === 1 ? "" : "s"}`;
  const parts = [...(added.length > 0 ? [`added ${count(added.length)}`] : []), ...(removed.length > 0 ? [`removed ${count(removed.length)}`] : [])];
  const text = parts.join(" and ");
  return {
    action,
    resources: [{ type: "key", id: key.id }, { type: "api", id: key.apiId }, ...[...added, ...removed].map((id) => ({ type: kind, id }))],
    description: `${text.charAt(0).toUpperCase()}${text.slice(1)}.`,
  };
}

/** A permission deleted between being ensured and being attached: ensure it again. */
class PermissionVanished extends Error {}

/** add (keep what is attached) or set (detach everything else); returns the direct permissions after. */
async function attachPermissions(deps: Deps, p: Principal, key: KeyDetails, slugs: string[], mode: "add" | "set"): Promise<PermissionRow[]> {
  const now = deps.clock.now();
  for (let attempt = 1; ; attempt++) {
    const missing = await missingPermissionSlugs(deps.pool, p.workspaceId, slugs);
    if (missing.length > 0) {
      requireAny(p, [RBAC.createPermission]);
      // Created outside the transaction, each committed on its own (as createKey
      // does): a concurrent request creating the same slug then finds it.
      await ensurePermissions(deps.pool, p.workspaceId, missing, now, auditCreatedOnUse(deps, p, "permission"));
    }
    try {
      return await withLockedKey(deps, p, key, mode === "set" ? "key.set_permissions" : "key.add_permissions", "permission", async (conn) => {
        const before = await keyPermissionIds(conn, key.id);
        if (mode === "set") await unlinkPermissionsExcept(conn, p.workspaceId, key.id, slugs);
        await linkPermissionSlugs(conn, p.workspaceId, key.id, slugs, now);
        const after = await listKeyPermissions(conn, key.id);
        const attached = new Set(after.map((x) => x.slug));
        if (slugs.some((s) => !attached.has(s))) {
          if (attempt < 3) throw new PermissionVanished();
          // Deleted under us three times running: say so rather than report a partial success.
          throw new AppError("err:svc:application:service_unavailable", "A permission was deleted while it was being granted; try again.");
        }
        return { before, after };
      });
    } catch (err) {
      if (err instanceof PermissionVanished) continue;
      throw err;
    }
  }
}

export async function addPermissions(deps: Deps, p: Principal, input: PermissionsInput): Promise<PermissionRow[]> {
  const slugs = distinct(input.permissions);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.addPermission]);
  const after = await attachPermissions(deps, p, key, slugs, "add");
  await deps.invalidate("key", key.id);
  return after;
}

export async function setPermissions(deps: Deps, p: Principal, input: PermissionsInput): Promise<PermissionRow[]> {
  const slugs = distinct(input.permissions);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.addPermission]);
  requireAny(p, [RBAC.removePermission]);
  const after = await attachPermissions(deps, p, key, slugs, "set");
  await deps.invalidate("key", key.id);
  return after;
}

export async function removePermissions(deps: Deps, p: Principal, input: PermissionsInput): Promise<PermissionRow[]> {
  const slugs = distinct(input.permissions);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.removePermission]);
  // An unknown slug is an error; a known one that is not attached is a no-op.
  const [unknown] = await missingPermissionSlugs(deps.pool, p.workspaceId, slugs);
  if (unknown !== undefined) throw permissionNotFound(unknown);
  const after = await withLockedKey(deps, p, key, "key.remove_permissions", "permission", async (conn) => {
    const before = await keyPermissionIds(conn, key.id);
    await unlinkPermissionSlugs(conn, p.workspaceId, key.id, slugs);
    return { before, after: await listKeyPermissions(conn, key.id) };
  });
  await deps.invalidate("key", key.id);
  return after;
}

const ROLE_ACTION = { add: "key.add_roles", remove: "key.remove_roles", set: "key.set_roles" } as const;

/**
 * Roles are looked up inside the transaction that holds the key's lock, and
 * share-locked there: an unknown name fails the whole call before anything
 * changes, and a role cannot be deleted between being found and being attached.
 */
async function changeRoles(deps: Deps, p: Principal, key: KeyDetails, names: string[], mode: "add" | "remove" | "set"): Promise<RoleRow[]> {
  const now = deps.clock.now();
  const after = await withLockedKey(deps, p, key, ROLE_ACTION[mode], "role", async (conn) => {
    const found = await lockRolesByName(conn, p.workspaceId, names);
    if (found.missing !== undefined) throw roleNotFound(found.missing);
    const before = await keyRoleIds(conn, key.id);
    if (mode === "remove") await unlinkRoles(conn, key.id, found.ids);
    if (mode === "set") await unlinkRolesExcept(conn, key.id, found.ids);
    if (mode !== "remove") await linkRoles(conn, p.workspaceId, key.id, found.ids, now);
    return { before, after: await listKeyRoles(conn, key.id) };
  });
  await deps.invalidate("key", key.id);
  return after;
}

export async function addRoles(deps: Deps, p: Principal, input: RolesInput): Promise<RoleRow[]> {
  const names = distinct(input.roles);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.addRole]);
  return changeRoles(deps, p, key, names, "add");
}

export async function removeRoles(deps: Deps, p: Principal, input: RolesInput): Promise<RoleRow[]> {
  const names = distinct(input.roles);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.removeRole]);
  return changeRoles(deps, p, key, names, "remove");
}

export async function setRoles(deps: Deps, p: Principal, input: RolesInput): Promise<RoleRow[]> {
  const names = distinct(input.roles);
  const key = await loadKey(deps, p, input.keyId);
  requireAny(p, apiPermission(key.apiId, "update_key"));
  requireAny(p, [RBAC.addRole]);
  requireAny(p, [RBAC.removeRole]);
  return changeRoles(deps, p, key, names, "set");
}
