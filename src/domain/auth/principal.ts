import { AppError } from "../errors.js";
import { anyGrantCovers } from "./wildcard.js";

/** Who is calling: a root key acting on its workspace. */
export interface Principal {
  workspaceId: string;
  rootKeyId: string;
  permissions: readonly string[];
}

/** Whether the principal holds any of the wanted permissions. */
export function holdsAny(p: Principal, wanted: readonly string[]): boolean {
  for (const w of wanted) if (anyGrantCovers(p.permissions, w)) return true;
  return false;
}

/** Throws 403 naming the permissions needed unless the principal holds one of them. */
export function requireAny(p: Principal, wanted: readonly string[]): void {
  if (holdsAny(p, wanted)) return;
  throw new AppError(
    "err:svc:authorization:insufficient_permissions",
    wanted.length === 1
      ? `Missing permission: '${wanted[0]}'`
      : `Missing one of these permissions: ${wanted.map((w) => `'${w}'`).join(" or ")}`,
  );
}

/** `apis.*.<action>` or `apis.<apiId>.<action>`. */
export const apiPermission = (apiId: string, action: string): string[] => [`apis.*.${action}`, `apis.${apiId}.${action}`];
