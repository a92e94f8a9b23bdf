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
import { type Actor, audited } from "../audit/audit.js";
import type { Principal } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { Validator } from "../validate.js";
import { NAMESPACE_RULE } from "./namespaces.js";

export type { NamespaceListing };

export async function listNamespaces(deps: Pick<Deps, "pool">, workspaceId: string): Promise<NamespaceListing[]> {
  return listLiveNamespaces(deps.pool, workspaceId);
}

/** A namespace made from the dashboard, recorded with the operator (and their request) as actor. */
export async function createNamespace(
  deps: Pick<Deps, "pool" | "clock">,
  workspaceId: string,
  name: string,
  actor: Actor | Principal,
): Promise<NamespaceListing> {
  const v = new Validator();
  v.required("name", name, NAMESPACE_RULE);
  v.done();
  try {
    return await audited(
      deps,
      actor,
      (conn) => insertNamespace(conn, workspaceId, name, deps.clock.now()),
      (ns) => ({
        action: "ratelimit_namespace.create",
        resources: [{ type: "ratelimit_namespace", id: ns.id }],
        description: "Created the namespace with name.",
      }),
    );
  } catch (err) {
    if (err instanceof NamespaceNameTaken) {
      throw new AppError("err:svc:application:precondition_failed", "A namespace of this name exists, or existed and was deleted; choose another name.");
    }
    throw err;
  }
}

/** Soft-deletes it; cached lookups of it end here at once, and on other instances on their next poll. */
export async function deleteNamespace(
  deps: Pick<Deps, "pool" | "clock" | "invalidate">,
  workspaceId: string,
  namespaceId: string,
  actor: Actor | Principal,
): Promise<void> {
  const v = new Validator();
  v.required("namespaceId", namespaceId, { max: 48 });
  v.done();
  const deleted = await audited(
    deps,
    actor,
    (conn) => softDeleteNamespace(conn, workspaceId, namespaceId, deps.clock.now()),
    (done) =>
      done
        ? {
            action: "ratelimit_namespace.delete",
            resources: [{ type: "ratelimit_namespace", id: namespaceId }],
            description: "Deleted the namespace; limit requests naming it now answer 410.",
          }
        : undefined,
  );
  if (!deleted) throw new AppError("err:svc:data:ratelimit_namespace_not_found", "No live namespace with this id in the workspace.");
  await deps.invalidate("namespace", namespaceId);
}
