// Operators made by an administrator (`keyhold admin create`): the operator, the
// workspace it joins (created when missing) and their records, in one transaction.
// The record names the operator by id and the fields set, never the email's
// value nor anything of the password: the hash is a secret too (it can be
// attacked offline).
import { newId } from "../../core/ids.js";
import { insertOperator, linkWorkspace } from "../../storage/operators.js";
import { transaction } from "../../storage/sql.js";
import { findWorkspaceByName, insertWorkspace } from "../../storage/workspaces.js";
import { type Actor, cliActor, writeAudit } from "../audit/audit.js";
import type { Deps } from "../deps.js";

export interface CreateOperatorInput {
  /** Already normalised and checked (normalizeEmail, isEmail). */
  email: string;
  /** hashPassword's output: the password itself never reaches this layer. */
  passwordHash: string;
  /** The name of a workspace to join, created when missing. */
  workspace?: string | undefined;
}

/**
 * Creates the operator and, with `workspace`, links it to that workspace. Throws
 * OperatorExistsError for a taken email. The actor defaults to the CLI, its only
 * caller, so the call site need not name itself.
 */
export async function createOperator(
  deps: Pick<Deps, "pool" | "clock">,
  input: CreateOperatorInput,
  actor: Actor = cliActor(undefined),
): Promise<{ operatorId: string; workspaceId?: string }> {
  const now = deps.clock.now();
  return transaction(deps.pool, async (conn) => {
    const operatorId = await insertOperator(conn, { email: input.email, passwordHash: input.passwordHash, now });
    if (input.workspace === undefined) {
      await writeAudit(conn, deps, actor, {
        action: "operator.create",
        resources: [{ type: "operator", id: operatorId }],
        description: "Created the operator with email and password.",
      });
      return { operatorId };
    }
    // Found or made in this transaction: a workspace made by a concurrent process
    // in between fails this one (WorkspaceNameTaken) and nothing is kept; run it again.
    let ws = await findWorkspaceByName(conn, input.workspace);
    if (ws === undefined) {
      ws = { id: newId("ws", now), name: input.workspace, enabled: true };
      await insertWorkspace(conn, { id: ws.id, name: ws.name, now });
      // The new workspace's own log starts with its creation.
      await writeAudit(
        conn,
        deps,
        { ...actor, workspaceId: ws.id },
        {
          action: "workspace.create",
          resources: [{ type: "workspace", id: ws.id }],
          description: "Created the workspace with name, for a new operator to join.",
        },
      );
    }
    await linkWorkspace(conn, operatorId, ws.id, now);
    // In the workspace's own log, which then shows its new member.
    await writeAudit(
      conn,
      deps,
      { ...actor, workspaceId: ws.id },
      {
        action: "operator.create",
        resources: [
          { type: "operator", id: operatorId },
          { type: "workspace", id: ws.id },
        ],
        description: "Created the operator with email and password, as a member of the workspace.",
      },
    );
    return { operatorId, workspaceId: ws.id };
  });
}
