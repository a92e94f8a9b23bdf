import type { JsonObject } from "@bufbuild/protobuf";
import type { AnalyticsService } from "../../gen/keyhold/v2/analytics_service_pb.js";
import { type AnalyticsLimits, getRatelimits, getVerifications } from "../domain/analytics/analytics.js";
import type { Deps } from "../domain/deps.js";
import type { Operations } from "./types.js";

export function analyticsService(deps: Deps, limits: AnalyticsLimits): Operations<typeof AnalyticsService> {
  return {
    async getVerifications(req, { principal }) {
      return { data: (await getVerifications(deps, limits, principal, req.query)) as JsonObject[] };
    },
    async getRatelimits(req, { principal }) {
      return { data: (await getRatelimits(deps, limits, principal, req.query)) as JsonObject[] };
    },
  };
}
