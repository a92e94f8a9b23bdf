// The gRPC front door (h2c on GRPC_PORT), served by @grpc/grpc-js: measured here
// at several times the throughput of connect-node's gRPC handler. Service
// definitions are built from the same descriptors, messages are (de)serialised
// with protobuf-es, and the same operations run through invokeRpc. Failures
// carry the `err:svc:…` code in a google.rpc.Status detail
// (grpc-status-details-bin) and, for convenience, in `error-code` metadata.
import { create, type DescService, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import type { Deps } from "../domain/deps.js";
import { invalidInput } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { groupOf } from "../gateway/plugin.js";
import { invokeRpc } from "../server/connect.js";
import { metricsOf } from "../server/metrics.js";
import { readiness } from "../server/readiness.js";
import type { ServiceEntry } from "../services/types.js";

/** google.rpc.Status{code, message, details: [Any(keyhold.v2.ErrorDetail)]}, encoded by hand (3 fields). */
function statusDetails(code: number, message: string, err: ConnectError): Buffer {
  const w = new BinaryWriter();
  w.tag(1, 0).int32(code);
  w.tag(2, 2).string(message);
  for (const d of err.findDetails(ErrorDetailSchema)) {
    const any = new BinaryWriter();
    any.tag(1, 2).string(`type.googleapis.com/${ErrorDetailSchema.typeName}`);
    any.tag(2, 2).bytes(toBinary(ErrorDetailSchema, d));
    w.tag(3, 2).bytes(any.finish());
  }
  return Buffer.from(w.finish());
}

/** Bytes that did not decode as the request message: refused as invalid input, after authentication. */
class Undecodable {
  constructor(readonly reason: string) {}
}

const undecodable = (typeName: string, u: Undecodable) => async (): Promise<never> => {
  throw invalidInput([{ location: "body", message: `The request is not a valid ${typeName} message: ${u.reason}` }]);
};

/** grpc-js percent-encodes the status message and cannot encode a lone surrogate: the call would never end. */
const wellFormed = (s: string): string => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

function toServiceError(err: unknown): grpc.ServiceError {
  const ce = ConnectError.from(err);
  const message = wellFormed(ce.rawMessage);
  const metadata = new grpc.Metadata();
  const detail = ce.findDetails(ErrorDetailSchema)[0];
  if (detail) {
    metadata.set("error-code", detail.code);
    metadata.set("request-id", detail.requestId);
  }
  // Connect's codes are gRPC's codes, number for number.
  metadata.set("grpc-status-details-bin", statusDetails(ce.code, message, ce));
  return Object.assign(new Error(message), { code: ce.code as number, details: message, metadata }) as grpc.ServiceError;
}

function definition(deps: Deps, docsBase: string, service: DescService, ops: ServiceEntry["ops"]) {
  const metrics = metricsOf(deps);
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
          return fromBinary(m.input, buf);
        } catch (err) {
          return new Undecodable((err as Error).message);
        }
      },
      responseSerialize: (msg: never) => Buffer.from(toBinary(m.output, create(m.output, msg))),
      responseDeserialize: (buf: Buffer) => fromBinary(m.output, buf),
      originalName: m.localName,
    } as grpc.MethodDefinition<unknown, unknown>;
    const operation = `${groupOf(service)}.${m.localName}`;
    handlers[m.name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const requestId = newId("req");
      const auth = call.metadata.get("authorization")[0];
      const idempotencyKey = call.metadata.get("idempotency-key").join(", ");
      const started = performance.now();
      const onReplay = () => {
        const md = new grpc.Metadata();
        md.set("idempotent-replayed", "true");
        call.sendMetadata(md);
      };
      invokeRpc(
        deps,
        docsBase,
        `${service.typeName}/${m.name}`,
        call.request instanceof Undecodable ? undecodable(m.input.typeName, call.request) : op,
        call.request,
        typeof auth === "string" ? auth : undefined,
        requestId,
        idempotencyKey === "" ? undefined : idempotencyKey,
        onReplay,
      ).then(
        // As on the JSON side: answers finished in one event-loop turn are written together.
        (res) => {
          metrics.request("grpc", operation, "OK", (performance.now() - started) / 1000);
          setImmediate(() => callback(null, res));
        },
        (err) => {
          const se = toServiceError(err);
          metrics.request("grpc", operation, grpc.status[se.code] ?? String(se.code), (performance.now() - started) / 1000);
          callback(se);
        },
      );
    };
  }
  return { def, handlers };
}

export interface GrpcServer {
  port: number;
  close(timeoutMs: number): Promise<void>;
}

export async function startGrpcServer(
  deps: Deps,
  docsBase: string,
  entries: ServiceEntry[],
  host: string,
  port: number,
  redisConfigured = false,
): Promise<GrpcServer> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 10 * 1024 * 1024 });
  const statuses: Record<string, "SERVING"> = { "": "SERVING" };
  for (const { service, ops } of entries) {
    const { def, handlers } = definition(deps, docsBase, service, ops);
    server.addService(def as grpc.ServiceDefinition, handlers);
    statuses[service.typeName] = "SERVING";
  }
  const health = new HealthImplementation(statuses);
  health.addToServer(server);
  // Health follows readiness (database, and Redis when configured), checked every 5 s.
  let closing = false;
  const follow = async () => {
    const r = await readiness(deps, redisConfigured);
    if (!closing) for (const name of Object.keys(statuses)) health.setStatus(name, r.ready ? "SERVING" : "NOT_SERVING");
  };
  const readinessTimer = setInterval(() => void follow(), 5_000);
  readinessTimer.unref();
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port: bound,
    close: (timeoutMs) =>
      new Promise<void>((resolve) => {
        closing = true;
        clearInterval(readinessTimer);
        for (const name of Object.keys(statuses)) health.setStatus(name, "NOT_SERVING");
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
