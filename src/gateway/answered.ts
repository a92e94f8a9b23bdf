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
 * Names the request in its answer (x-request-id, equal to meta.requestId),
 * counts and logs it. Called by the handlers themselves rather than from
 * onRequest and onResponse hooks: Fastify's hook runner on every request cost
 * the hot path a few per cent of its throughput here (bench/README.md).
 */
export function answered(req: FastifyRequest, reply: FastifyReply, status: number, metrics: Metrics, operation = operationOf(req)): void {
  reply.header("x-request-id", req.id);
  recordRequest(req.log, metrics, { door: "http", operation, requestId: req.id, status, httpStatus: status, ms: reply.elapsedTime });
}
