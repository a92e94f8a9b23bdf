// The gRPC front door (h2c on GRPC_PORT), served by @grpc/grpc-js: measured here
// at several times the throughput of connect-node's gRPC handler. Service
// definitions are built from the same descriptors, messages are (de)serialised
// with protobuf-es, and the same operations run through invokeRpc. Failures
// carry the `err:svc:…` code in the google.rpc.Status of
// grpc-status-details-bin (as keyhold.v2.ErrorDetail and google.rpc.ErrorInfo)
// and, for convenience, in `error-code` metadata; field errors also travel
// there as google.rpc.BadRequest, by proto path.
import { type Http2Server, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream, sensitiveHeaders } from "node:http2";
import { create, type DescService, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AnySchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import * as grpc from "@grpc/grpc-js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { AppError, invalidInput } from "../core/errors.js";
import { requestId as newRequestId } from "../core/ids.js";
import { authenticateCached, lookupRootKey, RootKeyMiss } from "../domain/auth/authenticate.js";
import type { Principal } from "../domain/auth/principal.js";
import type { Deps } from "../domain/deps.js";
import { catalog, toConnectError } from "../errors/catalog.js";
import { groupOf } from "../gateway/plugin.js";
import type { ServiceEntry } from "../services/types.js";
import { singleMetadataAuthorization } from "../transport/credentials.js";
import { decodeBinary } from "../transport/decode.js";
import { type Caller, invokeRpc, rpcError } from "../transport/invoke.js";
import { metricsOf } from "../transport/metrics.js";
import { GrpcOrigin } from "../transport/origin.js";
import { readiness } from "../transport/readiness.js";
import { recordRequest } from "../transport/request-log.js";
import { HealthService, ServingStatus } from "./health.js";
import { addReflection, REFLECTION_SERVICES } from "./reflection.js";

/**
 * The google.rpc.Status of grpc-status-details-bin, with every detail of the
 * error in its order: keyhold.v2.ErrorDetail, google.rpc.ErrorInfo, then
 * google.rpc.BadRequest when there are field errors (errors/catalog.ts).
 */
function statusDetails(code: number, message: string, err: ConnectError): Buffer {
  const details = err.details.map((d) =>
    "desc" in d
      ? create(AnySchema, { typeUrl: `type.googleapis.com/${d.desc.typeName}`, value: toBinary(d.desc, create(d.desc, d.value)) })
      : create(AnySchema, { typeUrl: `type.googleapis.com/${d.type}`, value: d.value }),
  );
  return Buffer.from(toBinary(StatusSchema, create(StatusSchema, { code, message, details })));
}

/** Bytes that did not decode as the request message (or carried unknown fields): refused after authentication. */
class Undecodable {
  constructor(readonly error: unknown) {}
}

/** grpc-js percent-encodes the status message and cannot encode a lone surrogate: the call would never end. */
const wellFormed = (s: string): string => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

type GrpcStatus = Parameters<grpc.ServerInterceptingCallInterface["sendStatus"]>[0];

/** A success's trailers: only the request id differs from call to call. */
const PER_CALL = ["request-id"] as const;
/** An error's: its message and details (which quote the request id) too. */
const PER_ERROR = ["request-id", "grpc-message", "grpc-status-details-bin"] as const;

/**
 * The trailers of a call, whose per-call values go as HPACK literals "never
 * indexed" (Node's sensitiveHeaders): indexed, every call's new request id took
 * an entry of the connection's dynamic table and pushed older ones out, the
 * constant headers of later answers among them. Measured in a bare grpc-js
 * server (h2load, 50 streams, 8 interleaved rounds, per-round ratios, 2026-11-30):
 * a new request id in every call's trailers, 1.15x the CPU a call of none
 * (median; 1.03-1.18 in the middle rounds); never indexed, 1.02x. In keyhold
 * (verifyKey, this build and the one before on CPU 0 loaded at once from CPU 1,
 * 9 rounds of 3 s): calls/s x1.06, CPU a call x0.94 (medians). grpc-js copies
 * trailers with clone() and sends toHttp2Headers() of the copy, so both keep the
 * list; test/integration/grpc-trailers-hpack.test.ts reads it off the wire.
 */
class CallTrailers extends grpc.Metadata {
  constructor(private readonly unindexed: readonly string[]) {
    super();
  }
  override clone(): CallTrailers {
    const copy = new CallTrailers(this.unindexed);
    copy.merge(this);
    return copy;
  }
  override toHttp2Headers(): OutgoingHttpHeaders {
    const headers = super.toHttp2Headers();
    (headers as Record<symbol, unknown>)[sensitiveHeaders] = this.unindexed;
    return headers;
  }
}

function statusOf(err: unknown): GrpcStatus {
  const ce = ConnectError.from(err);
  const message = wellFormed(ce.rawMessage);
  const metadata = new CallTrailers(PER_ERROR);
  const detail = ce.findDetails(ErrorDetailSchema)[0];
  if (detail) {
    metadata.set("error-code", detail.code);
    metadata.set("request-id", detail.requestId);
  }
  // Connect's codes are gRPC's codes, number for number.
  metadata.set("grpc-status-details-bin", statusDetails(ce.code, message, ce));
  return { code: ce.code as number, details: message, metadata };
}

function toServiceError(err: unknown): grpc.ServiceError {
  const s = statusOf(err);
  return Object.assign(new Error(s.details), s) as grpc.ServiceError;
}

/**
 * A status grpc-js sent by itself, before or around our handler, as the error
 * our own code would have sent: a message over the limit (or one that inflates
 * past it), bytes that do not inflate, a compression it does not know, framing
 * a unary call does not allow (a second message, none), a deadline it cannot
 * read. Until our handler runs these are the caller's mistakes; once it runs,
 * grpc-js failing to write our answer is ours. grpc-js's own texts are not
 * passed on where they quote what the client sent.
 */
function ownStatus(status: GrpcStatus, handling: boolean, limit: number): AppError | undefined {
  if (status.code === grpc.status.OK || status.code === grpc.status.CANCELLED || status.code === grpc.status.DEADLINE_EXCEEDED) return undefined;
  if (handling) return new AppError("err:svc:application:unexpected_error");
  if (status.code === grpc.status.RESOURCE_EXHAUSTED) {
    return new AppError(
      "err:user:bad_request:request_body_too_large",
      `The request message is larger than the server accepts (${limit} bytes), sent or inflated.`,
    );
  }
  if (/unsupported encoding/i.test(status.details)) {
    return new AppError(
      "err:svc:application:unsupported_media_type",
      "The message is compressed with an encoding this server does not take; send it as it is, or as gzip or deflate.",
    );
  }
  if (/grpc-timeout/i.test(status.details)) {
    return invalidInput([
      { location: "header.grpc-timeout", message: "grpc-timeout is not a valid deadline.", fix: "Send digits and a unit (H, M, S, m, u, n), such as 500m." },
    ]);
  }
  return new AppError("err:user:bad_request:request_body_unreadable", `The request could not be read: ${status.details}.`);
}

/** What the door knew of a call before its message was read, for the handler. */
interface Prepared {
  requestId: string;
  caller: Caller;
  /** Set by the handler when it starts: from then on a failure is ours, not the caller's. */
  handling: boolean;
}

/**
 * Carried to the handler on the call's metadata object (grpc-js hands the same
 * object on). A property rather than a WeakMap: a WeakMap entry per call made
 * garbage collection about 3x costlier under load here.
 */
const kPrepared = Symbol("keyhold.prepared");
type PreparedMetadata = grpc.Metadata & { [kPrepared]?: Prepared };

interface DoorOptions {
  docsBase: string;
  bodyLimitBytes: number;
}

type Listener = Parameters<grpc.ServerInterceptingCallInterface["start"]>[0];

/** What every call's door shares: set once for the server. */
interface Door {
  deps: Deps;
  options: DoorOptions;
  metrics: ReturnType<typeof metricsOf>;
}

/**
 * The door's call on grpc-js's own call below it (see DoorCall): statuses grpc-js
 * sends by itself pass through the door too. The call below is grpc-js's own
 * only while the door is the server's one interceptor.
 */
const kDoorCall = Symbol("keyhold.doorCall");
type BaseCall = grpc.ServerInterceptingCallInterface & { [kDoorCall]?: DoorCall };

/**
 * Put as `sendStatus` on grpc-js's call below the door: every status of the
 * call passes here, those grpc-js sends by itself included (a message too
 * large, a deadline), which go straight to that call, never through the calls
 * above it. One function for every call, not a closure a call.
 */
function sendStatusThroughDoor(this: BaseCall, status: GrpcStatus): void {
  (this[kDoorCall] as DoorCall).finish(status);
}

/**
 * The door of every keyhold call on this port (health and other services pass
 * through): the root key is checked from the metadata alone, before grpc-js
 * starts reading the message (it reads only once the metadata is handed on), a
 * repeated `authorization` is refused, every answer carries `request-id` in its
 * trailers, and every call is logged and counted once with its final status.
 *
 * It is its own intercepting call, and the listener of the call below it: one
 * object a call with its methods on the prototype. grpc-js's generic
 * ServerInterceptingCall (which this replaced) builds a responder, a listener
 * wrapper and a closure for every event of every call, for responders that may
 * answer later; the door answers at once, but for a root key that is not
 * cached, and until it hands the metadata on nothing is read, so there is
 * nothing to hold back meanwhile. Measured in bench/README.md ("The gRPC
 * door's own call").
 */
class DoorCall implements grpc.ServerInterceptingCallInterface {
  readonly requestId = newRequestId();
  private readonly started = performance.now();
  /** What the handler is handed on the metadata. */
  readonly prepared: Prepared;
  private above: Listener | undefined;
  private cancelled = false;
  private recorded = false;
  /** grpc-js's own sendStatus of the call below. */
  private readonly sendBelow: (status: GrpcStatus) => void;

  constructor(
    private readonly door: Door,
    private readonly next: BaseCall,
    private readonly path: string,
    private readonly operation: string,
  ) {
    this.prepared = { requestId: this.requestId, caller: { error: undefined }, handling: false };
    this.sendBelow = next.sendStatus;
    next[kDoorCall] = this;
    next.sendStatus = sendStatusThroughDoor;
  }

  // The call, as the handler above sees it.

  start(listener: Listener): void {
    this.above = listener;
    this.next.start(this);
  }
  sendMetadata(metadata: grpc.Metadata): void {
    this.next.sendMetadata(metadata);
  }
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's own signature
  sendMessage(message: any, callback: () => void): void {
    this.next.sendMessage(message, callback);
  }
  sendStatus(status: GrpcStatus): void {
    this.next.sendStatus(status);
  }
  startRead(): void {
    this.next.startRead();
  }
  getPeer(): string {
    return this.next.getPeer();
  }
  getDeadline(): grpc.Deadline {
    return this.next.getDeadline();
  }
  getHost(): string {
    return this.next.getHost();
  }
  getAuthContext(): ReturnType<grpc.ServerInterceptingCallInterface["getAuthContext"]> {
    return this.next.getAuthContext();
  }
  getConnectionInfo(): ReturnType<grpc.ServerInterceptingCallInterface["getConnectionInfo"]> {
    return this.next.getConnectionInfo();
  }
  getMetricsRecorder(): ReturnType<grpc.ServerInterceptingCallInterface["getMetricsRecorder"]> {
    return this.next.getMetricsRecorder();
  }

  // The listener of the call below.

  onReceiveMetadata(metadata: grpc.Metadata): void {
    if (this.cancelled) return;
    // A root key in the cache is admitted in this turn, without a promise (as on the JSON door).
    let found: Principal | RootKeyMiss;
    try {
      found = authenticateCached(this.door.deps, singleMetadataAuthorization(metadata.get("authorization")));
    } catch (err) {
      this.refuse(err);
      return;
    }
    if (found instanceof RootKeyMiss) {
      lookupRootKey(this.door.deps, found)
        .then(
          (principal) => this.admit(metadata, principal),
          (err) => this.refuse(err),
        )
        .catch((err) => this.fail(err));
      return;
    }
    try {
      this.admit(metadata, found);
    } catch (err) {
      this.fail(err);
    }
  }
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's own signature
  onReceiveMessage(message: any): void {
    if (!this.cancelled) this.above?.onReceiveMessage(message);
  }
  onReceiveHalfClose(): void {
    if (!this.cancelled) this.above?.onReceiveHalfClose();
  }
  /** The client went away (or the call ended): counted once, as cancelled if nothing was sent. */
  onCancel(): void {
    this.cancelled = true;
    this.record(grpc.status.CANCELLED, undefined);
    this.above?.onCancel();
  }

  /** The caller is known: the metadata goes up, and the handler above starts reading the message. */
  private admit(metadata: grpc.Metadata, principal: Principal): void {
    if (this.cancelled) return;
    const ua = metadata.get("user-agent")[0];
    principal.origin = new GrpcOrigin(this.requestId, this.next.getPeer(), typeof ua === "string" ? ua : undefined);
    this.prepared.caller = { principal };
    (metadata as PreparedMetadata)[kPrepared] = this.prepared;
    this.above?.onReceiveMetadata(metadata);
  }

  // Nothing here may throw out of a promise: an unhandled rejection would end the process.
  private refuse(err: unknown): void {
    const { deps, options } = this.door;
    void rpcError(deps, options.docsBase, this.path, err, this.requestId)
      .then((ce) => this.sendStatus(statusOf(ce)))
      .catch((e) => this.fail(e));
  }
  private fail(err: unknown): void {
    this.door.deps.log.error({ err, requestId: this.requestId, rpc: this.path }, "unexpected error");
    this.sendStatus(statusOf(toConnectError(new AppError("err:svc:application:unexpected_error"), this.door.options.docsBase, this.requestId)));
  }

  /** Every status of the call, ours and grpc-js's own: the request id in its trailers, recorded, then sent. */
  finish(status: GrpcStatus): void {
    const { deps, options } = this.door;
    const own = ownStatus(status, this.prepared.handling, options.bodyLimitBytes);
    if (own !== undefined && codeOf(status) === undefined) {
      if (own.code === "err:svc:application:unexpected_error")
        deps.log.error({ requestId: this.requestId, rpc: this.path, details: status.details }, "unexpected error");
      status = statusOf(toConnectError(own, options.docsBase, this.requestId));
    } else if (codeOf(status) === undefined) {
      // The request id in the trailers, as every error of ours has it (successes included).
      const metadata = new CallTrailers(status.code === grpc.status.OK ? PER_CALL : PER_ERROR);
      if (status.metadata) metadata.merge(status.metadata);
      metadata.set("request-id", this.requestId);
      status = { ...status, metadata };
    }
    const detail = codeOf(status);
    this.record(status.code, typeof detail === "string" ? detail : undefined);
    this.sendBelow.call(this.next, status);
  }

  private record(status: number, detailCode: string | undefined): void {
    if (this.recorded) return;
    this.recorded = true;
    const spec = detailCode === undefined ? undefined : catalog[detailCode as keyof typeof catalog];
    recordRequest(this.door.deps.log, this.door.metrics, {
      door: "grpc",
      operation: this.operation,
      requestId: this.requestId,
      status: grpc.status[status] ?? String(status),
      httpStatus: spec?.status ?? (status === grpc.status.OK ? 200 : codeToHttpStatus(status as Code)),
      ms: performance.now() - this.started,
    });
  }
}

const codeOf = (s: GrpcStatus) => s.metadata?.get("error-code")[0];

/** The door as grpc-js's server interceptor: keyhold's calls get a DoorCall; health and reflection pass through untouched. */
function doorInterceptor(deps: Deps, options: DoorOptions, operations: Map<string, string>): grpc.ServerInterceptor {
  const door: Door = { deps, options, metrics: metricsOf(deps) };
  return (descriptor, next) => {
    const operation = operations.get(descriptor.path);
    // grpc-js's type names its own class; the server uses only the interface (server-interceptors.js).
    return (operation === undefined ? next : new DoorCall(door, next, descriptor.path, operation)) as grpc.ServerInterceptingCall;
  };
}

function definition(deps: Deps, docsBase: string, service: DescService, ops: ServiceEntry["ops"]) {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const m of service.methods) {
    const op = ops[m.localName];
    if (op === undefined) throw new Error(`no implementation for ${m.name}`);
    def[m.name] = {
      path: `/${service.typeName}/${m.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (msg: never) => Buffer.from(toBinary(m.input, msg)),
      // A throw here would make grpc-js answer INTERNAL with no error code.
      requestDeserialize: (buf: Buffer) => {
        try {
          return decodeBinary(m.input, buf);
        } catch (err) {
          return new Undecodable(err);
        }
      },
      responseSerialize: (msg: never) => Buffer.from(toBinary(m.output, create(m.output, msg))),
      responseDeserialize: (buf: Buffer) => fromBinary(m.output, buf),
      originalName: m.localName,
    } as grpc.MethodDefinition<unknown, unknown>;
    const label = `${service.typeName}/${m.name}`;
    handlers[m.name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const prepared = (call.metadata as PreparedMetadata)[kPrepared];
      if (prepared === undefined) {
        callback(toServiceError(new ConnectError(`${label} was called around the door`, Code.Internal)));
        return;
      }
      prepared.handling = true;
      const idempotencyKey = call.metadata.get("idempotency-key").join(", ");
      const onReplay = () => {
        const md = new grpc.Metadata();
        md.set("idempotent-replayed", "true");
        call.sendMetadata(md);
      };
      const request = call.request;
      invokeRpc(
        deps,
        docsBase,
        m,
        request instanceof Undecodable
          ? async () => {
              throw request.error;
            }
          : op,
        request,
        prepared.caller,
        prepared.requestId,
        idempotencyKey === "" ? undefined : idempotencyKey,
        onReplay,
      ).then(
        // As on the JSON side: answers finished in one event-loop turn are written together.
        (res) => setImmediate(() => callback(null, res)),
        (err) => callback(toServiceError(err)),
      );
    };
  }
  return { def, handlers };
}

/** grpc.max_concurrent_streams: calls open at once on one connection. */
export const MAX_CONCURRENT_STREAMS = 1_000;

export interface GrpcServer {
  port: number;
  close(timeoutMs: number): Promise<void>;
}

/**
 * What the door sees of every HTTP/2 stream before grpc-js does, listening on
 * grpc-js's HTTP/2 servers (not part of its typed API, hence the check that
 * they are there):
 * - Node's HTTP/2 layer keeps the first of repeated `authorization` fields and
 *   drops the rest before grpc-js builds the call's metadata, so a call carrying
 *   two root keys would be served as the first. The raw field list still has
 *   them: every value is put back, and the door refuses the call
 *   (transport/credentials.ts).
 * - A method no service here has is answered UNIMPLEMENTED by grpc-js before any
 *   interceptor runs: it is logged and counted here, as `unmatched`.
 */
function watchStreams(server: grpc.Server, served: (path: string) => boolean, unmatched: () => void): void {
  const servers = (server as unknown as { http2Servers?: Map<Http2Server, unknown> }).http2Servers;
  if (!(servers instanceof Map) || servers.size === 0)
    throw new Error("grpc-js no longer exposes its HTTP/2 servers: repeated authorization metadata could not be refused");
  for (const h2 of servers.keys()) {
    h2.prependListener("stream", (_stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
      const path = headers[":path"];
      if (typeof path !== "string" || !served(path)) unmatched();
      const values: string[] = [];
      for (let i = 0; i < rawHeaders.length; i += 2) if ((rawHeaders[i] as string).toLowerCase() === "authorization") values.push(rawHeaders[i + 1] as string);
      if (values.length > 1) (headers as Record<string, unknown>).authorization = values;
    });
  }
}

export interface GrpcServerOptions {
  docsBase: string;
  host: string;
  port: number;
  /** The largest request message, as sent and as inflated (BODY_LIMIT_BYTES). */
  bodyLimitBytes: number;
  /** Whether readiness (and so health) includes Redis. */
  redisConfigured?: boolean;
  /** Serve gRPC server reflection, v1 and v1alpha (GRPC_REFLECTION, on by default; off here unless set). */
  reflection?: boolean;
}

export async function startGrpcServer(deps: Deps, entries: ServiceEntry[], options: GrpcServerOptions): Promise<GrpcServer> {
  const { docsBase, host, port, redisConfigured = false } = options;
  const operations = new Map<string, string>();
  for (const { service } of entries) for (const m of service.methods) operations.set(`/${service.typeName}/${m.name}`, `${groupOf(service)}.${m.localName}`);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": options.bodyLimitBytes,
    // Calls open at once on one connection (Node's default has no limit): what a
    // client can make the server hold is bounded per connection. Load generators
    // and clients use far fewer (the bench's h2load, 1 each).
    "grpc.max_concurrent_streams": MAX_CONCURRENT_STREAMS,
    // No channelz: grpc-js keeps its call and session statistics by default (a
    // tracker object with four closures a call, a Map lookup of the session, two
    // Date.now() a call), for a channelz service that keyhold does not serve.
    "grpc.enable_channelz": 0,
    interceptors: [doorInterceptor(deps, { docsBase, bodyLimitBytes: options.bodyLimitBytes }, operations)],
  });
  for (const { service, ops } of entries) {
    const { def, handlers } = definition(deps, docsBase, service, ops);
    server.addService(def as grpc.ServiceDefinition, handlers);
  }
  const health = new HealthService(["", ...entries.map((e) => e.service.typeName)]);
  health.addToServer(server);
  if (options.reflection === true)
    addReflection(
      server,
      entries.map((e) => e.service),
    );
  // Health follows readiness (database, and Redis when configured), checked every 5 s.
  let closing = false;
  const follow = async () => {
    const r = await readiness(deps, redisConfigured);
    if (!closing) health.setAll(r.ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  };
  const readinessTimer = setInterval(() => void follow(), 5_000);
  readinessTimer.unref();
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const metrics = metricsOf(deps);
  watchStreams(
    server,
    (path) =>
      operations.has(path) ||
      path.startsWith("/grpc.health.v1.Health/") ||
      (options.reflection === true && REFLECTION_SERVICES.some((s) => path.startsWith(`/${s}/`))),
    // Classed as a 404 would be on the JSON door (info), not as the 501 UNIMPLEMENTED stands for.
    () =>
      recordRequest(deps.log, metrics, { door: "grpc", operation: "unmatched", requestId: newRequestId(), status: "UNIMPLEMENTED", httpStatus: 404, ms: 0 }),
  );
  return {
    port: bound,
    close: (timeoutMs) =>
      new Promise<void>((resolve) => {
        closing = true;
        clearInterval(readinessTimer);
        health.setAll(ServingStatus.NOT_SERVING);
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, timeoutMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
