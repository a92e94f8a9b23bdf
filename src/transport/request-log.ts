// One log line and one metric for every request, whichever door it came through.
// The same fields everywhere (requestId, door, operation, status, ms) so a
// request can be followed from a client's error to the log; never a header or a
// body, so never a key.

/** The front doors: JSON `/v2` (`http`), Connect and gRPC-Web on the HTTP port, gRPC on its own port. */
export type Door = "http" | "connect" | "grpc-web" | "grpc";

/** What this takes of a logger (pino's, or the domain's). */
export interface RequestLogger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
  isLevelEnabled?(level: string): boolean;
}

/** What the metrics take of a request. */
export interface RequestCounter {
  request(transport: string, operation: string, status: string | number, seconds: number): void;
}

export interface RequestRecord {
  door: Door;
  /** `keys.verifyKey`, a path for other routes, `unmatched` for unknown ones. */
  operation: string;
  requestId: string;
  /** As counted: the HTTP status on `/v2`, the gRPC/Connect code name on the RPC doors. */
  status: string | number;
  /** The HTTP status this outcome stands for (what the JSON door would answer): decides the level. */
  httpStatus: number;
  ms: number;
}

/** Requests slower than this are logged at warn. */
export const SLOW_REQUEST_MS = 1_000;

/**
 * Counts the request and logs it: failed (5xx) or slow at warn, refused (4xx)
 * at info, the rest at debug (checked before the record is built: the hot path
 * pays for a debug line only when debug is on).
 */
export function recordRequest(log: RequestLogger, metrics: RequestCounter, r: RequestRecord): void {
  metrics.request(r.door, r.operation, r.status, r.ms / 1000);
  if (r.httpStatus >= 500 || r.ms >= SLOW_REQUEST_MS) {
    log.warn(line(r), r.httpStatus >= 500 ? "request failed" : "slow request");
  } else if (r.httpStatus >= 400) {
    log.info(line(r), "request refused");
  } else if (log.isLevelEnabled?.("debug") ?? true) {
    log.debug(line(r), "request");
  }
}

const line = (r: RequestRecord) => ({ requestId: r.requestId, door: r.door, operation: r.operation, status: r.status, ms: Math.round(r.ms) });
