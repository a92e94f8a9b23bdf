// permissions.createPermission, getPermission, listPermissions, deletePermission
// (docs/permissions.md, "Permissions and roles of end-user keys"). Permissions
// are workspace-scoped; the slug is unique in the workspace (case-sensitive),
// the name is not. getPermission and deletePermission take an id or a slug.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { DuplicatePermissionSlug, deletePermissionRow, findPermission, insertPermission, listPermissionsPage, type PermissionRow } from "../../storage/rbac.js";
import { audited, fieldList } from "../audit/audit.js";
import { type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { limits } from "../limits.js";
import { type PageInput, permissionNotFound, rbac } from "./rules.js";

export type { PermissionRow };

export interface CreatePermissionInput {
  name: string;
  slug: string;
  description?: string | undefined;
}

export async function createPermission(deps: Deps, p: Principal, input: CreatePermissionInput): Promise<{ permissionId: string }> {
  const now = deps.clock.now();
  requireAny(p, rbac("create_permission"));
  const permissionId = newId("perm", now);
  const description = input.description || undefined;
  try {
    await audited(
      deps,
      p,
      (conn) => insertPermission(conn, { id: permissionId, workspaceId: p.workspaceId, name: input.name, slug: input.slug, description, now }),
      () => ({
        action: "permission.create",
        resources: [{ type: "permission", id: permissionId }],
        description: `Created the permission with ${fieldList(["name", "slug", ...(description === undefined ? [] : ["description"])])}.`,
      }),
    );
  } catch (err) {
    if (err instanceof DuplicatePermissionSlug) {
      throw new AppError("err:svc:data:permission_already_exists", `A permission with slug '${input.slug}' already exists in this workspace`);
    }
    throw err;
  }
  return { permissionId };
}

export async function getPermission(deps: Deps, p: Principal, input: { permission: string }): Promise<PermissionRow> {
  requireAny(p, rbac("read_permission"));
  const found = await findPermission(deps.pool, p.workspaceId, input.permission);
  if (found === undefined) throw permissionNotFound();
  return found;
}

export async function listPermissions(deps: Deps, p: Principal, input: PageInput): Promise<{ permissions: PermissionRow[]; cursor: string | undefined }> {
  requireAny(p, rbac("read_permission"));
  const page = await listPermissionsPage(deps.pool, {
    workspaceId: p.workspaceId,
    limit: input.limit ?? limits.pageSize.default,
    cursor: input.cursor,
    search: input.search,
  });
  return { permissions: page.items, cursor: page.next };
}

/** Hard delete: the permission leaves every role and key at once. */
export async function deletePermission(deps: Deps, p: Principal, input: { permission: string }): Promise<void> {
  requireAny(p, rbac("delete_permission"));
  const found = await findPermission(deps.pool, p.workspaceId, input.permission);
  if (found === undefined) throw permissionNotFound();
  const deleted = await audited(
    deps,
    p,
    (conn) => deletePermissionRow(conn, p.workspaceId, found.id),
    (done) =>
      done
        ? {
            action: "permission.delete",
            resources: [{ type: "permission", id: found.id }],
            description: "Deleted the permission; it left every role and key that had it.",
          }
        : undefined,
  );
  if (!deleted) throw permissionNotFound();
  // Keys holding it (directly or through a role) must fail the very next
  // verification that asks for it (docs/caching.md): evict the workspace's records.
  await deps.invalidate("workspace", p.workspaceId);
}
