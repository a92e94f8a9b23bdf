// The workspaces of an operator: which they may act in, and new ones they make.
import { AppError } from "../../core/errors.js";
import { createOperatorWorkspace as insertOperatorWorkspace, WorkspaceNameTaken } from "../../storage/dashboard.js";
import { operatorWorkspace, operatorWorkspaces } from "../../storage/operators.js";
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

/** A new workspace with the operator as its member; a taken name is refused (never joined). */
export async function createOperatorWorkspace(deps: Pick<Deps, "pool" | "clock">, operatorId: string, name: string): Promise<{ id: string; name: string }> {
  const v = new Validator();
  v.required("name", name, { max: 256, noTrailingSpace: true });
  v.done();
  try {
    const ws = await insertOperatorWorkspace(deps.pool, operatorId, name, deps.clock.now());
    return { id: ws.id, name: ws.name };
  } catch (err) {
    if (err instanceof WorkspaceNameTaken)
      throw new AppError("err:svc:application:precondition_failed", "Another workspace already has this name; choose another.");
    throw err;
  }
}
