// An operator (a person signed in to the dashboard) acting in a workspace they
// belong to is a principal like a root key: same permission checks, same
// idempotency scoping, with an actor id that cannot be mistaken for a key's.
import type { Principal } from "../auth/principal.js";

/** What an operator may do in a workspace they belong to: everything. One array, so permission checks memoise on it. */
export const OPERATOR_GRANTS: readonly string[] = Object.freeze(["*"]);

/** The root-key id a session acts as (idempotency records are scoped by it). */
export const operatorActor = (operatorId: string): string => `op:${operatorId}`;

/** The operator a session-authenticated principal acts for (the inverse of operatorActor). */
export const operatorOf = (principal: Principal): string => principal.rootKeyId.slice("op:".length);

/** The principal of an operator in one of their workspaces. */
export const operatorPrincipal = (operatorId: string, workspaceId: string): Principal => ({
  workspaceId,
  rootKeyId: operatorActor(operatorId),
  permissions: OPERATOR_GRANTS,
});
