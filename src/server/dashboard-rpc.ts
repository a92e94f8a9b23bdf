// keyhold.dashboard.v1.DashboardService on the Connect door (services/dashboard.ts
// implements it): a root key is never accepted, and the service is in neither
// the JSON /v2 route table nor gRPC.
import { DashboardService } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import type { RequestOrigin } from "../domain/auth/principal.js";
import type { Deps } from "../domain/deps.js";
import { operatorActor, operatorOf } from "../domain/operators/principal.js";
import { type DashboardOps, dashboardService } from "../services/dashboard.js";
import type { Config } from "./config.js";
import type { ConnectService } from "./connect.js";
import { callSession } from "./dashboard.js";

/**
 * DashboardService on the Connect door: every call needs a live session (cookie,
 * CSRF token, same Origin), checked from the headers before the body is read.
 */
export function dashboardConnectService(deps: Deps, config: Config): ConnectService {
  const ops = dashboardService(deps);
  const sessionOfCall = callSession(deps, config);
  const adapted: ConnectService["ops"] = {};
  for (const method of DashboardService.methods) {
    const op = ops[method.localName as keyof DashboardOps] as (req: unknown, operatorId: string, origin: RequestOrigin | undefined) => Promise<unknown>;
    // The origin the door attached goes on, for the audit records of the operator's changes.
    adapted[method.localName] = (req, call) => op(req, operatorOf(call.principal), call.principal.origin);
  }
  return {
    service: DashboardService,
    // The session only: an Authorization header is ignored, so a root key opens nothing here.
    authenticate: async (headers) => {
      const session = await sessionOfCall(headers);
      return { workspaceId: "", rootKeyId: operatorActor(session.operatorId), permissions: [] };
    },
    ops: adapted,
  };
}
