// The end of every HTTP request that Fastify answers (JSON /v2, operations
// endpoints, refusals before routing): counted for /metrics and logged, through
// the same record as the RPC doors.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Metrics } from "../transport/metrics.js";
import { recordRequest } from "../transport/request-log.js";

/** `keys.verifyKey` for /v2 routes, the path for others, `unmatched` for unknown paths (request.routeOptions builds an object: not for the hot path). */
function operationOf(req: FastifyRequest): string {
  const url = req.routeOptions.url;
  return url === undefined ? "unmatched" : url.startsWith("/v2/") ? url.slice(4) : url;
}

/**
 * Counts and logs an answered request. Called by the handlers themselves rather
 * than from an onResponse hook, which cost the hot path a few per cent of its
 * throughput here.
 */
export function answered(req: FastifyRequest, reply: FastifyReply, status: number, metrics: Metrics, operation = operationOf(req)): void {
  recordRequest(req.log, metrics, { door: "http", operation, requestId: req.id, status, httpStatus: status, ms: reply.elapsedTime });
}
