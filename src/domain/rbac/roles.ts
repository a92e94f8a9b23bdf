// permissions.createRole, getRole, listRoles, deleteRole (docs/permissions.md,
// "Permissions and roles of end-user keys").
// Roles are workspace-scoped and their names unique (case-sensitive);
// getRole and deleteRole take an id or a name.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import {
  DuplicateRoleName,
  deleteRoleRow,
  existingSlugs,
  findRole,
  insertRole,
  linkRolePermissions,
  listRolesPage,
  type RoleRow,
  roleNameTaken,
} from "../../storage/rbac.js";
import { ensurePermissions } from "../../storage/relations.js";
import { transaction } from "../../storage/sql.js";
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
  for (let attempt = 1; ; attempt++) {
    // Auto-created permissions are committed on their own, outside the role's
    // transaction, so concurrent creators of the same slug find each other's row.
    const permissionIds = await ensurePermissions(deps.pool, p.workspaceId, slugs, now);
    try {
      await transaction(deps.pool, async (conn) => {
        await insertRole(conn, { id: roleId, workspaceId: p.workspaceId, name: input.name, description: input.description || undefined, now });
        const linked = await linkRolePermissions(conn, p.workspaceId, roleId, permissionIds, now);
        // A permission deleted by a concurrent deletePermission after it was
        // ensured: roll back and ensure again, rather than answer 200 without it.
        if (permissionIds.length < slugs.length || linked < slugs.length) {
          if (attempt < 3) throw new PermissionVanished();
          throw new AppError("err:svc:application:service_unavailable", "A permission was deleted while the role was being created; try again.");
        }
      });
      return { roleId };
    } catch (err) {
      if (err instanceof PermissionVanished) continue;
      if (err instanceof DuplicateRoleName) throw roleExists(input.name);
      throw err;
    }
  }
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
  const deleted = await transaction(deps.pool, (conn) => deleteRoleRow(conn, p.workspaceId, found.id));
  if (!deleted) throw roleNotFound();
  // Keys with the role must lose its permissions on the very next verification
  // (docs/caching.md): evict the workspace's cached key records.
  await deps.invalidate("workspace", p.workspaceId);
}
