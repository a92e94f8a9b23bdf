// buildServer(deps) returns a Fastify instance that is not listening: the JSON
// /v2 API, liveness, and Connect/gRPC-Web, with one error envelope for every
// failure path (unknown route, wrong method, bad body, auth, validation, 500).
import { type OutgoingHttpHeaders, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from "fastify";
import { AppError, type ErrorCode } from "../core/errors.js";
import { newId, requestId } from "../core/ids.js";
import { authenticate } from "../domain/auth/authenticate.js";
import type { Deps } from "../domain/deps.js";
import { catalog, errorBody } from "../errors/catalog.js";
import { redactKeys } from "../errors/redact.js";
import { answered } from "../gateway/answered.js";
import { registerDocs } from "../gateway/docs.js";
import { registerOpenApi } from "../gateway/openapi.js";
import { callerWorkspaceOf, gatewayPlugin, routeTable } from "../gateway/plugin.js";
import type { ServiceEntry } from "../services/types.js";
import { isDatabaseUnavailable } from "../storage/sql.js";
import { bodyComplete, writeAnswer } from "../transport/body.js";
import { databaseUnavailableLog } from "../transport/log-throttle.js";
import { metricsOf } from "../transport/metrics.js";
import { readiness } from "../transport/readiness.js";
import type { Config } from "./config.js";
import { connectDoor } from "./connect.js";
import { dashboardRoutes, sessionAuthenticator } from "./dashboard.js";
import { dashboardConnectService } from "./dashboard-rpc.js";
import { dashboardStatic } from "./dashboard-static.js";

export interface ServerOptions {
  config: Config;
  deps: Deps;
  services: ServiceEntry[];
  /** Where the dashboard's built pages are; dist/dashboard unless a test says otherwise. */
  dashboardDir?: string;
}

function fastifyErrorCode(err: FastifyError): { code: ErrorCode; detail?: string } {
  const status = err.statusCode ?? 500;
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE" || status === 413) {
    return { code: "err:user:bad_request:request_body_too_large", detail: "The request body is larger than the server accepts." };
  }
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" || status === 415) return { code: "err:svc:application:unsupported_media_type" };
  if (status >= 400 && status < 500) return { code: "err:user:bad_request:request_body_unreadable", detail: err.message };
  return { code: "err:svc:application:unexpected_error" };
}

/**
 * What Node's HTTP parser rejects before Fastify sees a request (a malformed
 * request line, headers over the size limit, a client too slow to send its
 * request) gets the same envelope as every other answer; then the connection
 * is closed, since the rest of its bytes cannot be trusted.
 */
function clientErrorHandler(docsBase: string) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    // Nobody is left to answer, or a response is already on its way (it cannot be interrupted cleanly).
    const responding = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === "ECONNRESET" || socket.destroyed || !socket.writable || responding) {
      socket.destroy();
      return;
    }
    const appErr =
      err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new AppError("err:user:bad_request:request_timeout", "The request was not received in time; the connection is closed.")
        : err.code === "HPE_HEADER_OVERFLOW"
          ? new AppError("err:user:bad_request:request_headers_too_large", "The request headers are larger than the server accepts.")
          : new AppError("err:user:bad_request:request_body_unreadable", "The request is not valid HTTP/1.1 and could not be read.");
    const requestId = newId("req");
    const status = catalog[appErr.code].status;
    const body = JSON.stringify({ meta: { requestId }, error: errorBody(appErr, docsBase) });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  };
}

/** TRUST_PROXY as a hop count: the nearest `hops` addresses of the chain are proxies (Fastify's types take no number). */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

export async function buildServer({ config, deps, services, dashboardDir }: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: config.logLevel },
    bodyLimit: config.bodyLimitBytes,
    // Off unless TRUST_PROXY says whose X-Forwarded-For/-Proto to believe (req.ip, req.protocol).
    trustProxy: typeof config.trustProxy === "number" ? trustHops(config.trustProxy) : config.trustProxy,
    genReqId: requestId,
    // Per-request logs (and a child logger per request) would cost the hot path;
    // errors are logged with their request id explicitly.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "requestId" }),
    childLoggerFactory: (logger) => logger,
    // While draining on SIGTERM, requests that still arrive on open connections are
    // served (with Connection: close) rather than refused.
    return503OnClosing: false,
    // Slow clients (slowloris) are cut off: headers and the whole request each have a deadline,
    // checked every second instead of Node's default 30 s.
    requestTimeout: config.requestTimeoutMs,
    http: { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: 1_000 },
    clientErrorHandler: clientErrorHandler(config.docsBaseUrl),
  });

  const send = async (reply: FastifyReply, req: FastifyRequest, err: AppError) => {
    const body = errorBody(await redactKeys(deps, err, callerWorkspaceOf(req)), config.docsBaseUrl);
    answered(req, reply, body.status, metrics);
    if (!bodyComplete(req.raw)) {
      // Refused before (or while) its body was read: answered while the rest of the body is discarded (transport/body.ts).
      reply.hijack();
      const headers = { ...reply.getHeaders(), "content-type": "application/json; charset=utf-8" } as OutgoingHttpHeaders;
      writeAnswer(req.raw, reply.raw, catalog[err.code].status, headers, JSON.stringify({ meta: { requestId: req.id }, error: body }));
      return reply;
    }
    return reply
      .code(catalog[err.code].status)
      .header("content-type", "application/json; charset=utf-8")
      .send({ meta: { requestId: req.id }, error: body });
  };

  const metrics = metricsOf(deps);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof AppError) return send(reply, req, err);
    if (req.raw.socket?.destroyed === true) {
      // The client went away mid-request (its reset is not the database's): nobody is left to answer.
      req.log.info({ requestId: req.id, url: req.url }, "client closed the request");
      return send(reply, req, new AppError("err:user:bad_request:request_body_unreadable", "The client closed the request."));
    }
    if (isDatabaseUnavailable(err)) {
      databaseUnavailableLog.run((suppressed) => req.log.error({ err, requestId: req.id, url: req.url, suppressed }, "database unavailable"));
      return send(reply, req, new AppError("err:svc:application:service_unavailable"));
    }
    const mapped = fastifyErrorCode(err);
    if (mapped.code === "err:svc:application:unexpected_error") {
      // Internals stay in the log, with the request id the client was given.
      req.log.error({ err, requestId: req.id, url: req.url }, "unexpected error");
    }
    return send(reply, req, new AppError(mapped.code, mapped.detail));
  });

  const known = new Set(routeTable(services).map((r) => `/v2/${r.path}`));
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    if (known.has(path)) {
      reply.header("allow", "POST");
      return send(reply, req, new AppError("err:svc:application:method_not_allowed", `${req.method} is not allowed on ${path}; use POST.`));
    }
    return send(reply, req, new AppError("err:svc:data:route_not_found", `No operation exists at ${req.method} ${path}.`));
  });

  // The /v2 routes set x-request-id themselves (gateway/answered.ts): an
  // onRequest hook on them was Fastify's hook runner on every verification.
  await app.register(gatewayPlugin(deps, services, config.bodyLimitBytes));
  // Everything else, in a scope of its own, names its request by the hook.
  await app.register(async (scope) => {
    scope.addHook("onRequest", (req, reply, done) => {
      reply.header("x-request-id", req.id);
      done();
    });
    // Operations endpoints: no root key (keep them off the public network, or behind the load balancer's allow list).
    scope.get("/metrics", async (_req, reply) => {
      reply.header("content-type", metrics.contentType);
      return metrics.text();
    });
    scope.get("/readyz", async (_req, reply) => {
      const r = await readiness(deps, config.redisUrl !== undefined);
      return reply.code(r.ready ? 200 : 503).send({ status: r.ready ? "ready" : "not ready", checks: r.checks });
    });
    // The API description, generated from the same route table (no root key needed).
    registerOpenApi(scope, services, config.docsBaseUrl);
    // Its reference page, rendered from /openapi.json with nothing fetched from elsewhere.
    registerDocs(scope);
    // Operator sign-in for the dashboard; its session also authenticates Connect calls (never JSON or gRPC).
    await scope.register(dashboardRoutes(deps, config));
    // Its pages: the built bundle in dist/dashboard.
    await scope.register(dashboardStatic(dashboardDir));
    // Connect and gRPC-Web: the same operations, with a root key or the dashboard's session.
    const sessionAuth = sessionAuthenticator(deps, config);
    const rootKeyOrSession = (headers: Headers) => {
      const authorization = headers.get("authorization");
      return authorization === null ? sessionAuth(headers) : authenticate(deps, authorization);
    };
    await scope.register(
      connectDoor(deps, config, [...services.map((s) => ({ ...s, authenticate: rootKeyOrSession })), dashboardConnectService(deps, config)]),
    );
  });
  return app;
}
