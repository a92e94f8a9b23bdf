// Reading the audit log: a workspace's records, newest first, for a root key
// holding `workspace.*.read_audit_log` or an operator of the workspace. The
// cursor is opaque to callers: the (time, pk) of the last record of a page.
import { invalidInput } from "../../core/errors.js";
import { type AuditRow, listAudit } from "../../storage/audit.js";
import { type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { AUDIT_ACTIONS } from "./audit.js";

export const READ_AUDIT_LOG = "workspace.*.read_audit_log";

export interface ListLogsInput {
  start?: number | undefined;
  end?: number | undefined;
  actorId?: string | undefined;
  actions?: readonly string[] | undefined;
  resourceId?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

const KNOWN = new Set<string>(AUDIT_ACTIONS);

const encodeCursor = (c: { time: number; pk: number }): string => Buffer.from(`${c.time}.${c.pk}`).toString("base64url");

function decodeCursor(cursor: string): { time: number; pk: number } | undefined {
  const m = /^(\d{1,16})\.(\d{1,20})$/.exec(Buffer.from(cursor, "base64url").toString("latin1"));
  if (m === null) return undefined;
  const time = Number(m[1]);
  const pk = Number(m[2]);
  return Number.isSafeInteger(time) && Number.isSafeInteger(pk) ? { time, pk } : undefined;
}

export async function listLogs(deps: Pick<Deps, "pool">, p: Principal, input: ListLogsInput): Promise<{ logs: AuditRow[]; cursor: string | undefined }> {
  requireAny(p, [READ_AUDIT_LOG]);
  return listWorkspaceLogs(deps, p.workspaceId, input);
}

/**
 * The workspace's records (its caller already known to act there: the
 * dashboard's operators), or with no workspace the operators' own events
 * outside any (sign-ins), which only the CLI reads.
 */
export async function listWorkspaceLogs(
  deps: Pick<Deps, "pool">,
  workspaceId: string | undefined,
  input: ListLogsInput,
): Promise<{ logs: AuditRow[]; cursor: string | undefined }> {
  const errors: { location: string; message: string }[] = [];
  (input.actions ?? []).forEach((a, i) => {
    if (!KNOWN.has(a)) errors.push({ location: `body.actions[${i}]`, message: `Unknown action '${a}'; known: ${AUDIT_ACTIONS.join(", ")}.` });
  });
  if (input.start !== undefined && input.end !== undefined && input.start > input.end) {
    errors.push({ location: "body.start", message: "start must not be after end." });
  }
  const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor);
  if (input.cursor !== undefined && after === undefined) errors.push({ location: "body.cursor", message: "cursor is not one this operation returned." });
  if (errors.length > 0) throw invalidInput(errors);
  const page = await listAudit(deps.pool, {
    workspaceId,
    since: input.start,
    until: input.end,
    actorId: input.actorId,
    actions: input.actions ?? [],
    resourceId: input.resourceId,
    limit: input.limit ?? 100,
    after,
  });
  return { logs: page.rows, cursor: page.next === undefined ? undefined : encodeCursor(page.next) };
}
