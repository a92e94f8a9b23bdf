// Namespaces managed as a whole (the dashboard): listed, made and deleted by
// name or id within a workspace the caller is already known to act in.
import { AppError } from "../../core/errors.js";
import {
  createNamespace as insertNamespace,
  listLiveNamespaces,
  type NamespaceListing,
  NamespaceNameTaken,
  softDeleteNamespace,
} from "../../storage/dashboard.js";
import type { Deps } from "../deps.js";
import { Validator } from "../validate.js";
import { NAMESPACE_RULE } from "./namespaces.js";

export type { NamespaceListing };

export async function listNamespaces(deps: Pick<Deps, "pool">, workspaceId: string): Promise<NamespaceListing[]> {
  return listLiveNamespaces(deps.pool, workspaceId);
}

export async function createNamespace(deps: Pick<Deps, "pool" | "clock">, workspaceId: string, name: string): Promise<NamespaceListing> {
  const v = new Validator();
  v.required("name", name, NAMESPACE_RULE);
  v.done();
  try {
    return await insertNamespace(deps.pool, workspaceId, name, deps.clock.now());
  } catch (err) {
    if (err instanceof NamespaceNameTaken) {
      throw new AppError("err:svc:application:precondition_failed", "A namespace of this name exists, or existed and was deleted; choose another name.");
    }
    throw err;
  }
}

/** Soft-deletes it; cached lookups of it end here at once, and on other instances on their next poll. */
export async function deleteNamespace(deps: Pick<Deps, "pool" | "clock" | "invalidate">, workspaceId: string, namespaceId: string): Promise<void> {
  const v = new Validator();
  v.required("namespaceId", namespaceId, { max: 48 });
  v.done();
  if (!(await softDeleteNamespace(deps.pool, workspaceId, namespaceId, deps.clock.now()))) {
    throw new AppError("err:svc:data:ratelimit_namespace_not_found", "No live namespace with this id in the workspace.");
  }
  await deps.invalidate("namespace", namespaceId);
}
