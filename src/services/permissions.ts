import type { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { createPermission, deletePermission, getPermission, listPermissions } from "../domain/rbac/permissions.js";
import { createRole, deleteRole, getRole, listRoles, setRolePermissions } from "../domain/rbac/roles.js";
import { toPagination, toPermission, toRole } from "./mappers.js";
import type { Operations } from "./types.js";

export function permissionsService(deps: Deps): Operations<typeof PermissionsService> {
  return {
    createPermission: (req, { principal }) => createPermission(deps, principal, { name: req.name, slug: req.slug, description: req.description }),
    getPermission: async (req, { principal }) => ({ permission: toPermission(await getPermission(deps, principal, { permission: req.permission })) }),
    async listPermissions(req, { principal }) {
      const page = await listPermissions(deps, principal, { limit: req.limit, cursor: req.cursor, search: req.search });
      return { permissions: page.permissions.map(toPermission), pagination: toPagination(page.cursor) };
    },
    async deletePermission(req, { principal }) {
      await deletePermission(deps, principal, { permission: req.permission });
      return {};
    },
    createRole: (req, { principal }) => createRole(deps, principal, { name: req.name, description: req.description, permissions: req.permissions }),
    getRole: async (req, { principal }) => ({ role: toRole(await getRole(deps, principal, { role: req.role })) }),
    async listRoles(req, { principal }) {
      const page = await listRoles(deps, principal, { limit: req.limit, cursor: req.cursor, search: req.search });
      return { roles: page.roles.map(toRole), pagination: toPagination(page.cursor) };
    },
    async deleteRole(req, { principal }) {
      await deleteRole(deps, principal, { role: req.role });
      return {};
    },
    setRolePermissions: async (req, { principal }) => ({
      permissions: (await setRolePermissions(deps, principal, { roleId: req.roleId, permissions: req.permissions })).map(toPermission),
    }),
  };
}
