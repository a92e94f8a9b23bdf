import type { AuditLogsService } from "../../gen/keyhold/v2/audit_logs_service_pb.js";
import { listLogs } from "../domain/audit/list.js";
import type { Deps } from "../domain/deps.js";
import type { AuditRow } from "../storage/audit.js";
import { big, optNum } from "./convert.js";
import { toPagination } from "./mappers.js";
import type { Operations } from "./types.js";

export const toAuditLog = (r: AuditRow) => ({
  id: r.id,
  time: big(r.time),
  actor: { type: r.actorType, id: r.actorId },
  action: r.action,
  resources: r.resources,
  description: r.description,
  requestId: r.requestId,
  remoteAddress: r.remoteAddress,
  userAgent: r.userAgent,
});

export function auditLogsService(deps: Deps): Operations<typeof AuditLogsService> {
  return {
    async listLogs(req, { principal }) {
      const page = await listLogs(deps, principal, {
        start: optNum(req.start),
        end: optNum(req.end),
        actorId: req.actorId,
        actions: req.actions,
        resourceId: req.resourceId,
        limit: req.limit,
        cursor: req.cursor,
      });
      return { logs: page.logs.map(toAuditLog), pagination: toPagination(page.cursor) };
    },
  };
}
