// Field rules, grants and errors shared by the permissions group. Root keys need
// `rbac.*.<action>`; a grant with `*` covers it by the glob rule
// (docs/permissions.md, "Wildcards"), so `rbac.*` and `*` do too.
import { AppError } from "../../core/errors.js";
import { limits, SLUG_PATTERN } from "../limits.js";
import type { Validator } from "../validate.js";

export const SLUG_RULE = { min: 1, max: 128, pattern: SLUG_PATTERN, patternText: "^[a-zA-Z0-9_:\\-\\.\\*]+$" } as const;
export const PERMISSION_NAME_RULE = { min: 1, max: 512 } as const;
/** Role names are unique, and the collation ignores trailing spaces: `a` and `a ` would be one row. */
export const ROLE_NAME_RULE = { min: 1, max: 128, noTrailingSpace: true } as const;
/** Role references (id or name) in getRole and deleteRole. */
export const ROLE_REF_RULE = { min: 1, max: 128 } as const;
export const DESCRIPTION_RULE = { max: 512 } as const;
export const SEARCH_RULE = { max: 256 } as const;
/**
 * The contract sets no item limit on createRole's `permissions`. An unbounded
 * list would end as one statement larger than the server accepts (a 500), so
 * the cap is the one createKey already has for permissions.
 */
export const ROLE_PERMISSIONS_MAX_ITEMS = limits.permissions.maxItems;

export type RbacAction = "create_permission" | "read_permission" | "delete_permission" | "create_role" | "read_role" | "delete_role" | "add_permission_to_role";

/** The grant an rbac operation needs; only the workspace-wide form exists. */
export const rbac = (action: RbacAction): string[] => [`rbac.*.${action}`];

export const permissionNotFound = (): AppError => new AppError("err:svc:data:permission_not_found");
export const roleNotFound = (): AppError => new AppError("err:svc:data:role_not_found");

export interface PageInput {
  limit?: number | undefined;
  cursor?: string | undefined;
  search?: string | undefined;
}

export function validatePage(v: Validator, input: PageInput): void {
  v.number("limit", input.limit, limits.pageSize);
  v.string("cursor", input.cursor, { min: 1, max: limits.cursor.max });
  v.string("search", input.search, SEARCH_RULE);
}
