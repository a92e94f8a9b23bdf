// The end of every HTTP request: counted for /metrics and logged.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Metrics } from "./metrics.js";

/** `keys.verifyKey` for /v2 routes, the path for others, `unmatched` for unknown paths (request.routeOptions builds an object: not for the hot path). */
function operationOf(req: FastifyRequest): string {
  const url = req.routeOptions.url;
  return url === undefined ? "unmatched" : url.startsWith("/v2/") ? url.slice(4) : url;
}

/** Requests slower than this are logged at warn. */
const SLOW_REQUEST_MS = 1_000;

/**
 * Counts an answered request for /metrics and logs it: failed (5xx) or slow at
 * warn, refused (4xx) at info, the rest at debug. Called by the handlers
 * themselves rather than from an onResponse hook, which cost the hot path a few
 * per cent of its throughput here.
 */
export function answered(req: FastifyRequest, reply: FastifyReply, status: number, metrics: Metrics, operation = operationOf(req)): void {
  const ms = reply.elapsedTime;
  metrics.request("http", operation, status, ms / 1000);
  if (status >= 500 || ms >= SLOW_REQUEST_MS) {
    req.log.warn({ requestId: req.id, operation, status, ms: Math.round(ms) }, status >= 500 ? "request failed" : "slow request");
  } else if (status >= 400) {
    req.log.info({ requestId: req.id, operation, status, ms: Math.round(ms) }, "request refused");
  } else if (req.log.level === "debug" || req.log.level === "trace") {
    req.log.debug({ requestId: req.id, operation, status, ms: Math.round(ms) }, "request");
  }
}

