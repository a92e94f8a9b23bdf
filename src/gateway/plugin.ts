// The JSON front door: `POST /v2/<group>.<operation>` for every RPC of every
// service, mapped from the service descriptors. It calls the same operations as
// Connect and gRPC, in-process, as plain function calls on the generated types.
import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, invalidInput } from "../core/errors.js";
import { authenticateCached, lookupRootKey, RootKeyMiss } from "../domain/auth/authenticate.js";
import type { Deps } from "../domain/deps.js";
import type { Answer, Call, ServiceEntry } from "../services/types.js";
import { ACCEPTED_ENCODINGS_HEADER, bodyReadByHandler, inflate, type RequestEncoding, readBody, readBodyNow, requestEncoding } from "../transport/body.js";
import { singleAuthorization } from "../transport/credentials.js";
import { parseJson } from "../transport/decode.js";
import { metricsOf } from "../transport/metrics.js";
import { HttpOrigin } from "../transport/origin.js";
import { endOfTurn } from "../transport/turn.js";
import { answered } from "./answered.js";
import { checkBody } from "./json-check.js";
import { sentWhole, shapeResponse, stringText, textWriterFor } from "./json-response.js";

/** `ApisService` -> `apis`, `RatelimitService` -> `ratelimit`. */
export const groupOf = (s: DescService): string => {
  const base = s.name.replace(/Service$/, "");
  return base.charAt(0).toLowerCase() + base.slice(1);
};

type BodyAdapter = (body: unknown) => unknown;

/**
 * The three spellings of a rate-limit request's namespace on /v2: `namespace`, `namespaceId` or `namespaceName`,
 * exactly one (docs/ratelimits.md, "Standalone limits: `ratelimit.limit` and `ratelimit.multiLimit`").
 */
const namespaceAliases: BodyAdapter = (body) => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return body;
  const sent = body as Record<string, unknown>;
  // `namespace` alone (what the SDK sends): the body as it is, not a copy of it.
  if (sent.namespace !== undefined && sent.namespaceId === undefined && sent.namespaceName === undefined) return body;
  const b = { ...sent };
  const given = ["namespace", "namespaceId", "namespaceName"].filter((k) => b[k] !== undefined);
  if (given.length > 1) {
    throw invalidInput([{ location: "body.namespace", message: `Send exactly one of namespace, namespaceId and namespaceName (got ${given.join(", ")}).` }]);
  }
  for (const alias of ["namespaceId", "namespaceName"]) {
    if (b[alias] !== undefined) {
      b.namespace = b[alias];
      delete b[alias];
    }
  }
  if (b.namespace === undefined) {
    throw invalidInput([{ location: "body.namespace", message: "namespace is required (namespaceId and namespaceName are accepted too)." }]);
  }
  return b;
};

const adapters: Record<string, BodyAdapter> = {
  "ratelimit.limit": namespaceAliases,
  "ratelimit.setOverride": namespaceAliases,
  "ratelimit.getOverride": namespaceAliases,
  "ratelimit.listOverrides": namespaceAliases,
  "ratelimit.deleteOverride": namespaceAliases,
  // multiLimit's JSON body is the array of checks itself.
  "ratelimit.multiLimit": (body) => (Array.isArray(body) ? { limits: body.map(namespaceAliases) } : body),
};

/**
 * The workspace of the authenticated caller of a request, for its error answer
 * (see errors/redact.ts): a field of the request (decorated in gatewayPlugin,
 * so every request of the door has it from its constructor). It was a WeakMap
 * keyed by the request: an ephemeron entry for every verification, for the
 * garbage collector to trace, to be read only when the request fails.
 */
const CALLER_WORKSPACE = Symbol("callerWorkspace");
type WithCaller = FastifyRequest & { [CALLER_WORKSPACE]?: string | undefined };
export const callerWorkspaceOf = (req: FastifyRequest): string | undefined => (req as WithCaller)[CALLER_WORKSPACE];

/** A header sent once; sent twice it is ambiguous, so the first is not silently picked. */
const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(", ") : v);

const JSON_TYPE = /^application\/json\s*(;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/**
 * The encoding of a JSON body, checked before a byte of it is read (after the
 * caller is authenticated): its media type and charset, then its
 * Content-Encoding. The body is read within BODY_LIMIT_BYTES
 * (transport/body.ts), inflated and parsed by the handler: at once when it has
 * all come (jsonBodyNow), else by readJsonBody.
 */
function jsonBodyEncoding(req: FastifyRequest, reply: FastifyReply): RequestEncoding | undefined {
  const ct = req.headers["content-type"];
  if (ct !== undefined && !JSON_TYPE.test(ct)) {
    throw new AppError("err:svc:application:unsupported_media_type", `Send the body as application/json (got ${ct}).`);
  }
  const charset = ct === undefined ? undefined : CHARSET.exec(ct)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new AppError("err:svc:application:unsupported_media_type", `JSON bodies are UTF-8; send charset=utf-8 or no charset (got ${ct}).`);
  }
  try {
    return requestEncoding(req.headers["content-encoding"]);
  } catch (err) {
    // What we do take, as RFC 7694 has a 415 for an encoding say.
    reply.header("accept-encoding", ACCEPTED_ENCODINGS_HEADER);
    throw err;
  }
}

/** Marks a body not there to be parsed at once: readJsonBody reads it. */
const LATER = Symbol("later");

/**
 * The parsed body when it is all in already and not compressed (a small body
 * comes with its headers), without a promise: an async reader cost every
 * request its promise and one more microtask turn.
 */
function jsonBodyNow(req: FastifyRequest, encoding: RequestEncoding | undefined, limit: number): unknown {
  if (encoding !== undefined) return LATER;
  const raw = readBodyNow(req.raw, limit);
  return raw === undefined ? LATER : parseJson(raw);
}

async function readJsonBody(req: FastifyRequest, encoding: RequestEncoding | undefined, limit: number): Promise<unknown> {
  const raw = readBodyNow(req.raw, limit) ?? (await readBody(req.raw, limit));
  return parseJson(encoding === undefined ? raw : await inflate(raw, encoding, limit));
}

export interface Route {
  path: string;
  /** The RPC's full name (`keyhold.v2.KeysService.CreateKey`). */
  rpc: string;
  group: string;
  input: DescMessage;
  output: DescMessage;
  method: DescMethod;
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  op: (req: any, call: Call) => Answer<any>;
}

export function routeTable(entries: ServiceEntry[]): Route[] {
  const routes: Route[] = [];
  for (const { service, ops } of entries) {
    const group = groupOf(service);
    for (const method of service.methods) {
      const op = ops[method.localName];
      if (op === undefined) throw new Error(`no implementation for ${service.typeName}.${method.name}`);
      routes.push({
        path: `${group}.${method.localName}`,
        rpc: `${service.typeName}.${method.name}`,
        group,
        input: method.input,
        output: method.output,
        method,
        op,
      });
    }
  }
  return routes;
}

/** The envelope of an answer as an object, for Fastify to serialize: `data` (and `pagination`) placed by shapeResponse. */
function envelope(requestId: string, route: Route, response: unknown): object {
  const shaped = shapeResponse(route.path, route.output, response);
  return shaped.pagination === undefined
    ? { meta: { requestId }, data: shaped.data }
    : { meta: { requestId }, data: shaped.data, pagination: shaped.pagination };
}

export function gatewayPlugin(deps: Deps, entries: ServiceEntry[], bodyLimit: number) {
  const metrics = metricsOf(deps);
  return async function gateway(app: FastifyInstance): Promise<void> {
    // Nothing is read before the handler: it authenticates first, so a request
    // without valid credentials costs no more than its headers, and a 401 wins
    // over a 400 for an unparsable body: the caller learns nothing about the API
    // before authenticating (docs/auth.md, "Credentials first, body second, on every door").
    bodyReadByHandler(app, ["application/json"]);
    app.decorateRequest(CALLER_WORKSPACE, undefined);

    // Liveness needs no root key and ignores any body (GET for the SDK, POST like every other /v2 path).
    // Still 200 when degraded (it still answers); the parts running degraded are named.
    const liveness = async (req: FastifyRequest, reply: FastifyReply) => {
      reply.header("x-request-id", req.id);
      const degraded = deps.degraded();
      return {
        meta: { requestId: req.id },
        data: degraded.length === 0 ? { message: "OK" } : { message: `degraded: ${degraded.join(", ")}`, degraded },
      };
    };
    app.get("/v2/liveness", liveness);
    app.post("/v2/liveness", liveness);

    for (const route of routeTable(entries)) {
      const adapt = adapters[route.path];
      // An answer sent whole as `data` is written as JSON text at once (json-response.ts, textWriterFor).
      const asText = sentWhole(route.output) ? textWriterFor(route.output) : undefined;
      app.post(`/v2/${route.path}`, async (req: FastifyRequest, reply: FastifyReply) => {
        const authorization = singleAuthorization(req.raw.rawHeaders, req.headers.authorization);
        const found = authenticateCached(deps, authorization);
        const principal = found instanceof RootKeyMiss ? await lookupRootKey(deps, found) : found;
        principal.origin = new HttpOrigin(req);
        (req as WithCaller)[CALLER_WORKSPACE] = principal.workspaceId;
        const encoding = jsonBodyEncoding(req, reply);
        // The handler starts while Node is still parsing the packet that carried the
        // headers; a body that came with them is buffered once this turn's parsing ends.
        if (!req.raw.complete) await undefined;
        let body = jsonBodyNow(req, encoding, bodyLimit);
        if (body === LATER) body = await readJsonBody(req, encoding, bodyLimit);
        if (adapt) body = adapt(body);
        const { json, errors } = checkBody(route.input, body);
        if (errors.length > 0) throw invalidInput(errors);
        // `json` already has the generated message's shape: the same object a Connect or gRPC caller's request has.
        const call: Call = { principal, requestId: req.id, idempotencyKey: headerValue(req.headers["idempotency-key"]) };
        // An answer that came as a value (a hot verifyKey or ratelimit.limit, services/types.ts Answer) is not awaited: an await is a microtask turn.
        const answer = route.op(json, call);
        const response = answer instanceof Promise ? await answer : answer;
        if (call.replayed === true) reply.header("idempotent-replayed", "true");
        const sent = asText !== undefined ? `{"meta":{"requestId":${stringText(req.id)}},"data":${asText(response)}}` : envelope(req.id, route, response);
        // Write the response at the end of this event-loop turn, together with the
        // others finished in it, instead of one socket write per request as soon as
        // it is ready. Measured here on verifyKey: about 2x the requests/s and a
        // lower p99 at 50 connections; a lone request waits a few microseconds.
        await endOfTurn();
        answered(req, reply, 200, metrics, route.path);
        reply.header("content-type", "application/json; charset=utf-8");
        return sent;
      });
    }
  };
}
