import { AnalyticsService } from "../../gen/keyhold/v2/analytics_service_pb.js";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { AuditLogsService } from "../../gen/keyhold/v2/audit_logs_service_pb.js";
import { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { RootKeysService } from "../../gen/keyhold/v2/root_keys_service_pb.js";
import { andThen } from "../core/answer.js";
import type { Deps } from "../domain/deps.js";
import { analyticsService } from "../services/analytics.js";
import { apisService } from "../services/apis.js";
import { auditLogsService } from "../services/audit-logs.js";
import { withFieldRules } from "../services/field-rules.js";
import { withIdempotency } from "../services/idempotency.js";
import { identitiesService } from "../services/identities.js";
import { keysService } from "../services/keys.js";
import { permissionsService } from "../services/permissions.js";
import { ratelimitService } from "../services/ratelimit.js";
import { rootKeysService } from "../services/root-keys.js";
import type { ServiceEntry } from "../services/types.js";
import { metricsOf } from "../transport/metrics.js";

/** keys.verifyKey's outcome codes, counted for /metrics whichever door the call came through. */
function countingOutcomes(deps: Deps, ops: ReturnType<typeof keysService>): ReturnType<typeof keysService> {
  const metrics = metricsOf(deps);
  const verify = ops.verifyKey;
  const counted = <T extends { code?: string }>(res: T): T => {
    metrics.verification(String(res.code));
    return res;
  };
  return {
    ...ops,
    // Not async: a hot key's answer comes as a value (services/types.ts, Answer) and goes on as one.
    verifyKey: (req, call) => {
      return andThen(verify(req, call), counted);
    },
  };
}

/**
 * Every service with its implementation: the one list all front doors serve.
 * Each request meets its fields' rules (from the protos) before its operation,
 * inside the idempotency wrapper, as the domain's own checks were.
 */
export function services(deps: Deps): ServiceEntry[] {
  return withIdempotency(
    deps,
    withFieldRules([
      { service: ApisService, ops: apisService(deps) },
      { service: KeysService, ops: countingOutcomes(deps, keysService(deps)) },
      { service: IdentitiesService, ops: identitiesService(deps) },
      { service: RatelimitService, ops: ratelimitService(deps) },
      { service: PermissionsService, ops: permissionsService(deps) },
      { service: RootKeysService, ops: rootKeysService(deps) },
      { service: AuditLogsService, ops: auditLogsService(deps) },
      { service: AnalyticsService, ops: analyticsService(deps, deps.analyticsQueries) },
    ]),
  );
}
