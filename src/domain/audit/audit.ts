// Every change leaves a record in the audit log, written on the change's own
// connection inside its transaction: the change and its record commit together
// or not at all (test/integration/audit-atomic.test.ts fails the insert on
// purpose). A record names who (a root key, an operator, or the CLI), what
// (`key.update`), which resources (ids) and which fields changed: never a value
// that could be a secret, never a key or a root key.
import { newId } from "../../core/ids.js";
import { type AuditResource, type AuditRow, auditInserts, insertAudit } from "../../storage/audit.js";
import type { OnCreated } from "../../storage/key-migrations.js";
import { commitWithOthers, type PoolConnection, type Statement, transaction } from "../../storage/sql.js";
import type { Principal, RequestOrigin } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import type { AuditAction } from "./actions.js";

export { AUDIT_ACTIONS, type AuditAction } from "./actions.js";
export type { AuditResource };

/** Who made a change, as the log names them. */
export interface Actor {
  /** undefined for an operator's own events outside any workspace (sign-ins). */
  workspaceId: string | undefined;
  type: "root_key" | "operator" | "system";
  /** The root key's id, the operator's id, or the tool's name (`cli`). */
  id: string;
  origin: RequestOrigin | undefined;
}

export interface AuditEvent {
  action: AuditAction;
  resources: AuditResource[];
  /** What changed, in words and field names; never a value that could be secret. */
  description: string;
}

const OPERATOR = "op:";

/** The actor of a principal: a root key, or an operator acting through the dashboard. */
export function actorOf(p: Principal): Actor {
  return p.rootKeyId.startsWith(OPERATOR)
    ? { workspaceId: p.workspaceId, type: "operator", id: p.rootKeyId.slice(OPERATOR.length), origin: p.origin }
    : { workspaceId: p.workspaceId, type: "root_key", id: p.rootKeyId, origin: p.origin };
}

/** The CLI (an administrator with the database in hand), acting on a workspace. */
export const cliActor = (workspaceId: string | undefined): Actor => ({ workspaceId, type: "system", id: "cli", origin: undefined });

/** An operator's own event, outside any workspace (a sign-in). */
export const operatorSelf = (operatorId: string, origin: RequestOrigin | undefined): Actor => ({
  workspaceId: undefined,
  type: "operator",
  id: operatorId,
  origin,
});

const cut = (s: string | undefined, max: number): string | undefined => (s === undefined ? undefined : s.slice(0, max));

/** Writes the records of a change on its connection (which must be inside the change's transaction). */
export async function writeAudit(
  conn: PoolConnection,
  deps: Pick<Deps, "clock">,
  actor: Actor | Principal,
  events: AuditEvent | readonly AuditEvent[],
): Promise<void> {
  const who = "type" in actor ? actor : actorOf(actor);
  const now = deps.clock.now();
  for (const e of Array.isArray(events) ? (events as readonly AuditEvent[]) : [events as AuditEvent]) await insertAudit(conn, auditRow(who, e, now));
}

function auditRow(who: Actor, e: AuditEvent, now: number): AuditRow {
  return {
    id: newId("log", now),
    workspaceId: who.workspaceId,
    time: now,
    actorType: who.type,
    actorId: who.id,
    action: e.action,
    resources: e.resources,
    description: e.description.slice(0, 1024),
    requestId: who.origin?.requestId,
    remoteAddress: cut(who.origin?.remoteAddress, 64),
    userAgent: cut(who.origin?.userAgent, 256),
  };
}

/**
 * Runs a change in a transaction and writes its record there too. `describe`
 * sees the change's result: undefined (nothing changed, e.g. already deleted)
 * writes no record.
 */
export async function audited<T>(
  deps: Pick<Deps, "pool" | "clock">,
  actor: Actor | Principal,
  change: (conn: PoolConnection) => Promise<T>,
  describe: (result: T) => AuditEvent | readonly AuditEvent[] | undefined,
): Promise<T> {
  return transaction(deps.pool, async (conn) => {
    const result = await change(conn);
    const events = describe(result);
    if (events !== undefined) await writeAudit(conn, deps, actor, events);
    return result;
  });
}

/**
 * A change made only of writes known in advance, committed with its record in
 * one round trip (sql.ts's commitInOneTrip), shared with the other such changes
 * made in the same event-loop turn or while earlier groups are at the database
 * (commitWithOthers): what `audited` does, without a round trip per statement.
 */
export async function auditedInOneTrip(
  deps: Pick<Deps, "pool" | "clock">,
  actor: Actor | Principal,
  change: readonly Statement[],
  event: AuditEvent,
): Promise<void> {
  const who = "type" in actor ? actor : actorOf(actor);
  await commitWithOthers(deps.pool, [...change, ...auditInserts(auditRow(who, event, deps.clock.now()))]);
}

/** "name, meta and expires" from the fields a request set. */
export function fieldList(fields: readonly string[]): string {
  if (fields.length <= 1) return fields[0] ?? "nothing";
  return `${fields.slice(0, -1).join(", ")} and ${fields[fields.length - 1]}`;
}

/**
 * The hook that audits rows a request creates on first use (an externalId's
 * identity, a permission slug, a role name): they commit with their record, in
 * their own transaction, before the key that names them.
 */
export function auditCreatedOnUse(
  deps: Pick<Deps, "pool" | "clock">,
  actor: Actor | Principal,
  kind: "identity" | "permission" | "role",
): { pool: Deps["pool"]; created: OnCreated } {
  return {
    pool: deps.pool,
    created: (conn, created) =>
      writeAudit(conn, deps, actor, {
        action: `${kind}.create`,
        resources: created.map((c) => ({ type: kind, id: c.id })),
        description: `Created ${created.length === 1 ? `the ${kind}` : `${created.length} ${kind === "identity" ? "identities" : `${kind}s`}`} on first use, named by a key operation.`,
      }),
  };
}
