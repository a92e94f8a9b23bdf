// The Connect and gRPC-Web door on the HTTP port. Connect's router writes the
// protocols' answers (status, headers, error JSON, gRPC-Web trailers), but this
// door, not Connect, takes the request in, in the order the JSON door does:
//   1. the credentials, from the headers alone (a repeated Authorization header
//      is refused): an unauthenticated request costs no more than its headers,
//      and its connection is closed instead of its body being drained;
//   2. the body, bounded while it streams in and while it is inflated
//      (BODY_LIMIT_BYTES; see transport/body.ts);
//   3. the message, decoded with unknown fields refused and undecodable bytes
//      answered invalid_input (transport/decode.ts), not Connect's `internal`.
// Connect is then handed a body it decodes to an empty message, and the
// operation gets the message decoded here (or the error found here, which it
// throws) through the call's context values, so every answer, refusals
// included, is written by Connect in the caller's protocol and carries the
// same ErrorDetail as on the other doors.
// Connect's gRPC handler is off: gRPC has its own port (HTTP/2), and gRPC over
// this HTTP/1.1 port could not carry its trailers.
import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, createConnectRouter, createContextKey, createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, parseTimeout as parseConnectTimeout, parseContentType as parseConnectType } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout, parseContentType as parseGrpcWebType } from "@connectrpc/connect/protocol-grpc-web";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { AppError, invalidInput } from "../core/errors.js";
import type { Principal } from "../domain/auth/principal.js";
import type { Deps } from "../domain/deps.js";
import { catalog } from "../errors/catalog.js";
import { groupOf } from "../gateway/plugin.js";
import type { Answer, Call } from "../services/types.js";
import { ACCEPTED_ENCODINGS_HEADER, bodyReadByHandler, bodyTooLarge, inflate, readBody, requestEncoding, writeAnswer } from "../transport/body.js";
import { singleAuthorization } from "../transport/credentials.js";
import { badFraming, decodeBinary, decodeJson } from "../transport/decode.js";
import { type Caller, invokeRpc } from "../transport/invoke.js";
import { metricsOf } from "../transport/metrics.js";
import { HttpOrigin } from "../transport/origin.js";
import { type Door, recordRequest } from "../transport/request-log.js";
import type { Config } from "./config.js";

/** A service on this door: how its callers authenticate, and its operations. */
export interface ConnectService {
  service: DescService;
  /** Who calls, from the request's headers alone (a root key, or the dashboard's session). */
  authenticate(headers: Headers): Promise<Principal>;
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  ops: Record<string, (req: any, call: Call) => Answer<any>>;
}

/** What the door found before Connect saw the request, handed to the operation. */
interface Prepared {
  requestId: string;
  caller: Caller;
  /** The decoded request, when the body was read and decoded. */
  message?: unknown;
  /** Why the body could not be taken (too large, undecodable), once the caller was known. */
  bodyError?: unknown;
  /** The outcome the operation ended with: a Connect code name, and the HTTP status it stands for. */
  outcome?: { status: string; httpStatus: number };
}

const kPrepared = createContextKey<Prepared | undefined>(undefined);

type Wire = { door: Door; binary: boolean; framed: boolean };

/** The protocol's deadline header, checked by the door so that a bad one is answered like any other bad input. */
function checkTimeout(wire: Wire, headers: Headers): void {
  const name = wire.framed ? "grpc-timeout" : "connect-timeout-ms";
  const value = headers.get(name);
  if (value === null) return;
  const parsed = wire.framed ? parseGrpcTimeout(value, Number.MAX_SAFE_INTEGER) : parseConnectTimeout(value, Number.MAX_SAFE_INTEGER);
  if (parsed.error !== undefined) {
    headers.delete(name);
    throw invalidInput([
      {
        location: `header.${name}`,
        message: `${name} is not a valid deadline.`,
        fix: wire.framed ? "Send digits and a unit (H, M, S, m, u, n), such as 500m." : "Send milliseconds as digits.",
      },
    ]);
  }
}

/** The request's protocol and format, for a POST this door decodes; undefined leaves the answer (415, 405) to Connect. */
function wireOf(method: string, contentType: string | undefined): Wire | undefined {
  if (method !== "POST") return undefined;
  const connect = parseConnectType(contentType ?? null);
  if (connect !== undefined) return connect.stream ? undefined : { door: "connect", binary: connect.binary, framed: false };
  const web = parseGrpcWebType(contentType ?? null);
  if (web !== undefined && !web.text) return { door: "grpc-web", binary: web.binary, framed: true };
  return undefined;
}

/** The body Connect is handed: it decodes to an empty message in the request's own format. */
function placeholderBody(wire: Wire | undefined): AsyncIterable<Uint8Array> {
  const content = wire === undefined || wire.binary ? new Uint8Array(0) : new TextEncoder().encode("{}");
  const chunk = wire?.framed === true ? Uint8Array.of(0, 0, 0, 0, content.length, ...content) : content;
  return (async function* () {
    if (chunk.length > 0) yield chunk;
  })();
}

/** The one message of a gRPC-Web request body: a 5-byte envelope (flags, length) and its bytes. */
async function unframe(body: Buffer, grpcEncoding: string | undefined, limit: number): Promise<Buffer> {
  if (body.length < 5) throw badFraming("the 5-byte message envelope is missing or cut short");
  const flags = body[0] as number;
  const length = body.readUInt32BE(1);
  if (flags & 0x80) throw badFraming("a request carries no trailers");
  if (length > limit) throw bodyTooLarge(limit);
  if (body.length < 5 + length) throw badFraming(`the envelope announces ${length} bytes and ${body.length - 5} follow`);
  if (body.length > 5 + length) throw badFraming("a unary call takes exactly one message");
  const message = body.subarray(5);
  if ((flags & 0x01) === 0) return message;
  const encoding = requestEncoding(grpcEncoding, "grpc-encoding");
  if (encoding === undefined) throw badFraming("the message is marked compressed, but grpc-encoding names no compression");
  return inflate(message, encoding, limit);
}

async function readMessage(req: FastifyRequest, wire: Wire, input: DescMessage, limit: number): Promise<unknown> {
  // Checked before reading: an encoding we cannot undo is refused without taking the body in. For
  // gRPC-Web, grpc-encoding only matters to a message flagged compressed (as grpc-js takes it).
  const encoding = wire.framed ? undefined : requestEncoding(req.headers["content-encoding"]);
  const raw = await readBody(req.raw, limit);
  const grpcEncoding = req.headers["grpc-encoding"];
  const bytes = wire.framed ? await unframe(raw, typeof grpcEncoding === "string" ? grpcEncoding : undefined, limit) : await inflate(raw, encoding, limit);
  return wire.binary ? decodeBinary(input, bytes) : decodeJson(input, bytes);
}

/** The grpc-status of a gRPC-Web answer, from its trailer frame (flag 0x80) or its headers. */
function grpcWebStatus(res: UniversalServerResponse, body: Buffer): number | undefined {
  const inHeaders = new Headers(res.header).get("grpc-status");
  if (inHeaders !== null) return Number(inHeaders);
  for (let at = 0; at + 5 <= body.length; at += 5 + body.readUInt32BE(at + 1)) {
    if (((body[at] as number) & 0x80) === 0) continue;
    const m = /grpc-status:\s*(\d+)/i.exec(body.subarray(at + 5, at + 5 + body.readUInt32BE(at + 1)).toString());
    if (m !== null) return Number(m[1]);
  }
  return undefined;
}

/** The outcome of a failed operation: its code name, and the HTTP status its error code stands for. */
function outcomeOf(err: unknown): { status: string; httpStatus: number } {
  const ce = ConnectError.from(err);
  const code = ce.findDetails(ErrorDetailSchema)[0]?.code;
  const spec = code === undefined ? undefined : catalog[code as keyof typeof catalog];
  return { status: Code[ce.code], httpStatus: spec?.status ?? codeToHttpStatus(ce.code) };
}

/** The operations of the services, each taking the message and caller the door prepared. */
function routes(deps: Deps, docsBase: string, services: ConnectService[]) {
  return (router: ConnectRouter): void => {
    for (const { service, ops } of services) {
      const impl: Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>> = {};
      for (const method of service.methods) {
        const op = ops[method.localName];
        if (op === undefined) throw new Error(`no implementation for ${service.typeName}.${method.name}`);
        const label = `${service.typeName}/${method.name}`;
        impl[method.localName] = async (_placeholder, ctx) => {
          const p = ctx.values.get(kPrepared);
          if (p === undefined) throw new ConnectError(`${label} was called around the door`, Code.Internal);
          const bodyError = p.bodyError;
          try {
            const res = await invokeRpc(
              deps,
              docsBase,
              method,
              bodyError === undefined
                ? op
                : async () => {
                    throw bodyError;
                  },
              p.message,
              p.caller,
              p.requestId,
              ctx.requestHeader.get("idempotency-key") ?? undefined,
              () => ctx.responseHeader.set("idempotent-replayed", "true"),
            );
            p.outcome = { status: "OK", httpStatus: 200 };
            return res;
          } catch (err) {
            p.outcome = outcomeOf(err);
            throw err;
          }
        };
      }
      router.service(service, impl as never);
    }
  };
}

/**
 * The request as Connect's handlers take it, with the placeholder body.
 * connect-node's own conversion builds the URL from the Host header and throws
 * (a 500) on one that HTTP/1.0 leaves out or a client sends unparsable; Connect
 * reads only the URL's path and query, so a fixed origin is used instead.
 */
function universalRequest(req: FastifyRequest, reply: FastifyReply, wire: Wire | undefined, prepared: Prepared): UniversalServerRequest {
  const header = new Headers();
  for (const [name, value] of Object.entries(req.raw.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) header.append(name, v);
  }
  const abort = new AbortController();
  reply.raw.once("close", () => abort.abort());
  return {
    httpVersion: req.raw.httpVersion,
    method: req.method,
    url: `http://localhost${req.raw.url ?? "/"}`,
    header,
    body: placeholderBody(wire),
    signal: abort.signal,
    contextValues: createContextValues().set(kPrepared, prepared),
  };
}

/** Counts the authorization headers before Node's parser keeps only the first (see transport/credentials.ts). */
async function callerOf(req: FastifyRequest, service: ConnectService, headers: Headers): Promise<Caller> {
  try {
    singleAuthorization(req.raw.rawHeaders, req.headers.authorization);
    const principal = await service.authenticate(headers);
    principal.origin = new HttpOrigin(req);
    return { principal };
  } catch (error) {
    return { error };
  }
}

export function connectDoor(deps: Deps, config: Config, services: ConnectService[]) {
  const metrics = metricsOf(deps);
  const limit = config.bodyLimitBytes;
  return async function door(app: FastifyInstance): Promise<void> {
    const router = createConnectRouter({
      grpc: false,
      // Never reached with a real body (the door reads it), but a bound all the same.
      readMaxBytes: limit,
      acceptCompression: [compressionGzip, compressionBrotli],
    });
    routes(deps, config.docsBaseUrl, services)(router);
    const byName = new Map(services.map((s) => [s.service.typeName, s]));

    // Nothing is read before the handler: it reads the body itself, after the credentials.
    bodyReadByHandler(app, ["application/json", "application/proto", "application/grpc-web+proto", "application/grpc-web"]);

    for (const handler of router.handlers) {
      const service = byName.get(handler.service.typeName) as ConnectService;
      const method: DescMethod = handler.method;
      const operation = `${groupOf(handler.service)}.${method.localName}`;
      const serve = async (req: FastifyRequest, reply: FastifyReply, wire: Wire | undefined): Promise<void> => {
        // Replaced below for every request this door decodes; Connect answers the others (415, 405) without calling the operation.
        const prepared: Prepared = { requestId: req.id, caller: { error: new AppError("err:svc:application:unsupported_media_type") } };
        const uReq = universalRequest(req, reply, wire, prepared);
        if (wire !== undefined) {
          prepared.caller = await callerOf(req, service, uReq.header);
          if (prepared.caller.principal !== undefined) {
            try {
              checkTimeout(wire, uReq.header);
              prepared.message = await readMessage(req, wire, method.input, limit);
            } catch (err) {
              prepared.bodyError = err;
            }
          }
        }
        // Connect decodes the placeholder body; what it would read or inflate is already taken.
        for (const h of ["content-length", "content-encoding", "grpc-encoding"]) uReq.header.delete(h);
        const res: UniversalServerResponse = await handler(uReq);
        // Unary answers are one small body: written whole, after the rest of an unread request body (transport/body.ts).
        const chunks: Uint8Array[] = [];
        for await (const chunk of res.body ?? []) chunks.push(chunk);
        const headers: Record<string, string> = Object.fromEntries(new Headers(res.header));
        headers["x-request-id"] = req.id;
        if (prepared.bodyError instanceof AppError && prepared.bodyError.code === "err:svc:application:unsupported_media_type") {
          headers["accept-encoding"] = ACCEPTED_ENCODINGS_HEADER;
        }
        const body = Buffer.concat(chunks);
        writeAnswer(req.raw, reply.raw, res.status, headers, body);
        // Without an outcome the operation never ran: Connect refused the request itself (415, 405).
        const grpcStatus = prepared.outcome === undefined && wire?.framed === true ? grpcWebStatus(res, body) : undefined;
        const outcome =
          prepared.outcome ??
          (grpcStatus === undefined
            ? { status: String(res.status), httpStatus: res.status }
            : { status: Code[grpcStatus] ?? String(grpcStatus), httpStatus: grpcStatus === 0 ? 200 : codeToHttpStatus(grpcStatus as Code) });
        recordRequest(req.log, metrics, {
          door: wire?.door ?? "connect",
          operation,
          requestId: req.id,
          status: outcome.status,
          httpStatus: outcome.httpStatus,
          ms: reply.elapsedTime,
        });
      };

      app.all(handler.requestPath, async (req: FastifyRequest, reply: FastifyReply) => {
        reply.hijack();
        const wire = wireOf(req.method, req.headers["content-type"]);
        try {
          await serve(req, reply, wire);
        } catch (err) {
          // A defect of ours (Connect answers every failure of a call itself): logged, and the caller still gets an answer.
          deps.log.error({ err, requestId: req.id, rpc: operation }, "unexpected error");
          if (!reply.raw.headersSent)
            writeAnswer(
              req.raw,
              reply.raw,
              500,
              { "content-type": "application/json", "x-request-id": req.id },
              '{"code":"internal","message":"internal error"}',
            );
          recordRequest(req.log, metrics, {
            door: wire?.door ?? "connect",
            operation,
            requestId: req.id,
            status: "Internal",
            httpStatus: 500,
            ms: reply.elapsedTime,
          });
        }
      });
    }
  };
}
