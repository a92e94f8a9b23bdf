// permissions.createRole, getRole, listRoles, deleteRole, setRolePermissions
// (docs/permissions.md, "Permissions and roles of end-user keys").
// Roles are workspace-scoped and their names unique (case-sensitive);
// getRole, deleteRole and setRolePermissions take an id or a name.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import {
  DuplicateRoleName,
  deleteRoleRow,
  existingSlugs,
  findRole,
  insertMissingPermissions,
  insertRole,
  linkRolePermissions,
  listRolePermissions,
  listRolesPage,
  lockPermissionsBySlug,
  lockRole,
  type PermissionRow,
  type RoleRow,
  replaceRolePermissions,
  roleNameTaken,
  rolePermissionIds,
} from "../../storage/rbac.js";
import { ensurePermissions } from "../../storage/relations.js";
import { transaction } from "../../storage/sql.js";
import { type AuditEvent, auditCreatedOnUse, audited, fieldList, writeAudit } from "../audit/audit.js";
import { type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { limits } from "../limits.js";
import { type PageInput, rbac, roleNotFound } from "./rules.js";

export type { RoleRow };

export interface CreateRoleInput {
  name: string;
  description?: string | undefined;
  /** Permission slugs; the missing ones are created (name = slug). */
  permissions: string[];
}

const roleExists = (name: string): AppError => new AppError("err:svc:data:role_already_exists", `A role with name '${name}' already exists in this workspace`);

export async function createRole(deps: Deps, p: Principal, input: CreateRoleInput): Promise<{ roleId: string }> {
  const now = deps.clock.now();

  requireAny(p, rbac("create_role"));
  // Slugs compare exactly, as the database and verification compare them:
  // `docs.Read` and `docs.read` are two permissions.
  const slugs = [...new Set(input.permissions)];
  if (slugs.length > 0) {
    requireAny(p, rbac("add_permission_to_role"));
    const have = await existingSlugs(deps.pool, p.workspaceId, slugs);
    if (slugs.some((s) => !have.has(s))) requireAny(p, rbac("create_permission"));
  }
  // A taken name is refused before any permission is auto-created for it.
  if (await roleNameTaken(deps.pool, p.workspaceId, input.name)) throw roleExists(input.name);

  const roleId = newId("role", now);
  const description = input.description || undefined;
  // Permissions this request created, over every attempt: the role's record names them.
  const created = new Set<string>();
  for (let attempt = 1; ; attempt++) {
    // The missing permissions are created and committed first, in a transaction
    // of their own with their own record, so concurrent creators of the same
    // slug find each other's row. Should the role then fail (a name taken
    // meanwhile), those permissions exist and their creation is still on record.
    const ensured = await ensureRolePermissions(deps, p, slugs, now);
    for (const id of ensured.created) created.add(id);
    const permissionIds = ensured.ids;
    try {
      await transaction(deps.pool, async (conn) => {
        await insertRole(conn, { id: roleId, workspaceId: p.workspaceId, name: input.name, description, now });
        const linked = await linkRolePermissions(conn, p.workspaceId, roleId, permissionIds, now);
        // A permission deleted by a concurrent deletePermission after it was
        // ensured: roll back and ensure again, rather than answer 200 without it.
        if (permissionIds.length < slugs.length || linked < slugs.length) {
          if (attempt < 3) throw new PermissionVanished();
          throw new AppError("err:svc:application:service_unavailable", "A permission was deleted while the role was being created; try again.");
        }
        const fields = ["name", ...(description === undefined ? [] : ["description"]), ...(slugs.length > 0 ? ["permissions"] : [])];
        const autoCreated =
          created.size === 0
            ? ""
            : created.size === 1
              ? "; one of its permissions did not exist and was created"
              : `; ${created.size} of its permissions did not exist and were created`;
        await writeAudit(conn, deps, p, {
          action: "role.create",
          resources: [{ type: "role", id: roleId }, ...[...created].map((id) => ({ type: "permission", id }))],
          description: `Created the role with ${fieldList(fields)}${autoCreated}.`,
        });
      });
      return { roleId };
    } catch (err) {
      if (err instanceof PermissionVanished) continue;
      if (err instanceof DuplicateRoleName) throw roleExists(input.name);
      throw err;
    }
  }
}

/** The ids of these slugs, creating the missing ones with a permission.create record in the same transaction. */
async function ensureRolePermissions(deps: Deps, p: Principal, slugs: readonly string[], now: number): Promise<{ ids: string[]; created: string[] }> {
  if (slugs.length === 0) return { ids: [], created: [] };
  return audited(
    deps,
    p,
    (conn) => insertMissingPermissions(conn, p.workspaceId, slugs, now),
    (r) =>
      r.created.length === 0
        ? undefined
        : {
            action: "permission.create",
            resources: r.created.map((id) => ({ type: "permission", id })),
            description: `Created ${r.created.length === 1 ? "a permission" : `${r.created.length} permissions`} (name and slug) that a new role named and that did not exist.`,
          },
  );
}

/** A permission deleted between being ensured and being attached to the new role. */
class PermissionVanished extends Error {}

export async function getRole(deps: Deps, p: Principal, input: { role: string }): Promise<RoleRow> {
  requireAny(p, rbac("read_role"));
  const found = await findRole(deps.pool, p.workspaceId, input.role);
  if (found === undefined) throw roleNotFound();
  return found;
}

export async function listRoles(deps: Deps, p: Principal, input: PageInput): Promise<{ roles: RoleRow[]; cursor: string | undefined }> {
  requireAny(p, rbac("read_role"));
  const page = await listRolesPage(deps.pool, {
    workspaceId: p.workspaceId,
    limit: input.limit ?? limits.pageSize.default,
    cursor: input.cursor,
    search: input.search,
  });
  return { roles: page.items, cursor: page.next };
}

/** Hard delete: the role leaves every key at once, and its permission links go with it. */
export async function deleteRole(deps: Deps, p: Principal, input: { role: string }): Promise<void> {
  requireAny(p, rbac("delete_role"));
  const found = await findRole(deps.pool, p.workspaceId, input.role);
  if (found === undefined) throw roleNotFound();
  const deleted = await audited(
    deps,
    p,
    (conn) => deleteRoleRow(conn, p.workspaceId, found.id),
    (done) =>
      done
        ? { action: "role.delete", resources: [{ type: "role", id: found.id }], description: "Deleted the role; it left every key that had it." }
        : undefined,
  );
  if (!deleted) throw roleNotFound();
  // Keys with the role must lose its permissions on the very next verification
  // (docs/caching.md): evict the workspace's cached key records.
  await deps.invalidate("workspace", p.workspaceId);
}

export interface SetRolePermissionsInput {
  /** The role's id or name. */
  roleId: string;
  /** The complete set of the role's slugs; the missing ones are created (name = slug). */
  permissions: readonly string[];
}

/**
 * Replaces the role's permissions, in one transaction that holds the role's
 * lock and writes the change's record. The rule is keys.setPermissions'
 * (domain/keys/grants.ts): a set both adds and removes, so it needs both
 * role-permission grants even when this call does only one, and a slug the
 * workspace lacks also needs `rbac.*.create_permission` (403 without it, as
 * there; never a 404). Such a slug is created first, committed on its own with
 * its own record (auditCreatedOnUse), so a concurrent creator of the same slug
 * finds it. Order of checks: the grants (403), the role (404), a new slug
 * (403): a root key without the grants cannot probe which roles exist.
 */
export async function setRolePermissions(deps: Deps, p: Principal, input: SetRolePermissionsInput): Promise<PermissionRow[]> {
  const now = deps.clock.now();
  requireAny(p, rbac("add_permission_to_role"));
  requireAny(p, rbac("remove_permission_from_role"));
  // Slugs compare exactly, as verification compares them (see createRole).
  const slugs = [...new Set(input.permissions)];
  const role = await findRole(deps.pool, p.workspaceId, input.roleId);
  if (role === undefined) throw roleNotFound();
  for (let attempt = 1; ; attempt++) {
    const have = await existingSlugs(deps.pool, p.workspaceId, slugs);
    const missing = slugs.filter((s) => !have.has(s));
    if (missing.length > 0) {
      requireAny(p, rbac("create_permission"));
      await ensurePermissions(deps.pool, p.workspaceId, missing, now, auditCreatedOnUse(deps, p, "permission"));
    }
    let done: { before: string[]; after: PermissionRow[] };
    try {
      done = await audited(
        deps,
        p,
        async (conn) => {
          // Deleted since it was found: the same 404, and nothing is written.
          if (!(await lockRole(conn, p.workspaceId, role.id))) throw roleNotFound();
          const before = await rolePermissionIds(conn, role.id);
          const ids = await lockPermissionsBySlug(conn, p.workspaceId, slugs);
          // A permission deleted by a concurrent deletePermission after it was
          // ensured: roll back and ensure again, rather than answer 200 without it.
          if (ids.length < slugs.length) {
            if (attempt < 3) throw new PermissionVanished();
            throw new AppError("err:svc:application:service_unavailable", "A permission was deleted while it was being given to the role; try again.");
          }
          await replaceRolePermissions(conn, p.workspaceId, role.id, ids, now);
          return { before, after: await listRolePermissions(conn, role.id) };
        },
        ({ before, after }) => rolePermissionsEvent(role.id, before, after),
      );
    } catch (err) {
      if (err instanceof PermissionVanished) continue;
      throw err;
    }
    // Keys holding the role must see the change on their very next verification
    // (docs/caching.md). Cached key records are not tagged by role, so, as
    // deleteRole does, every key record of the workspace is evicted; a call that
    // changed nothing leaves the caches alone.
    if (rolePermissionsEvent(role.id, done.before, done.after) !== undefined) await deps.invalidate("workspace", p.workspaceId);
    return done.after;
  }
}

/** The record of a role's new permission set: the ids added and removed; none when nothing changed. */
function rolePermissionsEvent(roleId: string, before: readonly string[], after: readonly PermissionRow[]): AuditEvent | undefined {
  const had = new Set(before);
  const has = new Set(after.map((x) => x.id));
  const added = [...has].filter((id) => !had.has(id));
  const removed = [...had].filter((id) => !has.has(id));
  if (added.length === 0 && removed.length === 0) return undefined;
  const count = (n: number) => `${n} permission${n === 1 ? "" : "s"}`;
  const parts = [...(added.length > 0 ? [`added ${count(added.length)}`] : []), ...(removed.length > 0 ? [`removed ${count(removed.length)}`] : [])];
  const text = parts.join(" and ");
  return {
    action: "role.set_permissions",
    resources: [{ type: "role", id: roleId }, ...[...added, ...removed].map((id) => ({ type: "permission", id }))],
    description: `Set the role's permissions: ${text}.`,
  };
}
