// Grants and errors shared by the permissions group (its field rules are on the proto fields). Root keys need
// `rbac.*.<action>`; a grant with `*` covers it by the glob rule
// (docs/permissions.md, "Wildcards"), so `rbac.*` and `*` do too.
import { AppError } from "../../core/errors.js";

export type RbacAction =
  | "create_permission"
  | "read_permission"
  | "delete_permission"
  | "create_role"
  | "read_role"
  | "delete_role"
  | "add_permission_to_role"
  | "remove_permission_from_role";

/** The grant an rbac operation needs; only the workspace-wide form exists. */
export const rbac = (action: RbacAction): string[] => [`rbac.*.${action}`];

export const permissionNotFound = (): AppError => new AppError("err:svc:data:permission_not_found");
export const roleNotFound = (): AppError => new AppError("err:svc:data:role_not_found");

export interface PageInput {
  limit?: number | undefined;
  cursor?: string | undefined;
  search?: string | undefined;
}
