// The workspaces of an operator: which they may act in, and new ones they make.
import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { WorkspaceNameTaken } from "../../storage/dashboard.js";
import { linkWorkspace, operatorWorkspace, operatorWorkspaces } from "../../storage/operators.js";
import { findWorkspaceByName, insertWorkspace, type WorkspaceRow } from "../../storage/workspaces.js";
import { type Actor, audited, cliActor } from "../audit/audit.js";
import type { RequestOrigin } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { Validator } from "../validate.js";

/**
 * The workspace, when the operator belongs to it and it is enabled. One they do
 * not belong to answers exactly as one that does not exist (403 either way).
 */
export async function memberWorkspace(deps: Pick<Deps, "pool">, operatorId: string, workspaceId: string): Promise<string> {
  const v = new Validator();
  v.required("workspaceId", workspaceId, { max: 48 });
  v.done();
  const ws = await operatorWorkspace(deps.pool, operatorId, workspaceId);
  if (ws === undefined) throw new AppError("err:svc:authorization:forbidden", "The workspace does not exist or this operator has no access to it.");
  // As on the v2 calls: a disabled workspace's root keys and namespaces stay as they are.
  if (!ws.enabled) throw new AppError("err:svc:authorization:workspace_disabled");
  return ws.id;
}

export async function listOperatorWorkspaces(deps: Pick<Deps, "pool">, operatorId: string): Promise<Array<{ id: string; name: string }>> {
  const all = await operatorWorkspaces(deps.pool, operatorId);
  return all.map((w) => ({ id: w.id, name: w.name }));
}

/**
 * A new workspace with the operator as its member; a taken name is refused (never
 * joined). The record is the new workspace's, made by the operator, with the
 * request's origin.
 */
export async function createOperatorWorkspace(
  deps: Pick<Deps, "pool" | "clock">,
  operatorId: string,
  name: string,
  origin?: RequestOrigin,
): Promise<{ id: string; name: string }> {
  const v = new Validator();
  v.required("name", name, { max: 256, noTrailingSpace: true });
  v.done();
  const now = deps.clock.now();
  const id = newId("ws", now);
  const actor: Actor = { workspaceId: id, type: "operator", id: operatorId, origin };
  try {
    await audited(
      deps,
      actor,
      async (conn) => {
        await insertWorkspace(conn, { id, name, now });
        await linkWorkspace(conn, operatorId, id, now);
      },
      () => ({
        action: "workspace.create",
        resources: [
          { type: "workspace", id },
          { type: "operator", id: operatorId },
        ],
        description: "Created the workspace with name; its creator became its first member.",
      }),
    );
    return { id, name };
  } catch (err) {
    if (err instanceof WorkspaceNameTaken)
      throw new AppError("err:svc:application:precondition_failed", "Another workspace already has this name; choose another.");
    throw err;
  }
}

/**
 * The workspace of this name, created (and recorded, actor the CLI) when missing:
 * `keyhold root-key create --workspace` makes the workspace it names.
 */
export async function ensureCliWorkspace(deps: Pick<Deps, "pool" | "clock">, name: string): Promise<WorkspaceRow> {
  const found = await findWorkspaceByName(deps.pool, name);
  if (found) return found;
  const now = deps.clock.now();
  const id = newId("ws", now);
  try {
    await audited(
      deps,
      cliActor(id),
      (conn) => insertWorkspace(conn, { id, name, now }),
      () => ({ action: "workspace.create", resources: [{ type: "workspace", id }], description: "Created the workspace with name, for a root key." }),
    );
    return { id, name, enabled: true };
  } catch (err) {
    // Made meanwhile by another process: that one is the workspace of this name.
    if (!(err instanceof WorkspaceNameTaken)) throw err;
    const again = await findWorkspaceByName(deps.pool, name);
    if (again === undefined) throw err;
    return again;
  }
}
