// The standard gRPC health service (grpc.health.v1: Check, Watch, List) on the
// gRPC port, its statuses following readiness (server.ts). Served from
// keyhold's own proto/grpc/health/v1 rather than by grpc-health-check 2.1.0:
// that package keeps every service name a Watch ever asked for in a map that it
// never shrinks, so a client without a key (health needs none) could grow the
// server's memory without bound with Watch calls on made-up names, each as
// large as a message may be (seen in review: +24 MiB per 1,000 names of
// 100 KB, never freed). Here the names are the fixed set the server serves;
// a Watch on any other is told SERVICE_UNKNOWN once and holds nothing.
import { create, type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthListRequestSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";

export { ServingStatus };

/** A grpc-js method definition (de)serialised with protobuf-es; bytes that do not decode become undefined. */
function method<I extends DescMessage, O extends DescMessage>(
  path: string,
  input: I,
  output: O,
  responseStream: boolean,
): grpc.MethodDefinition<unknown, unknown> {
  return {
    path,
    requestStream: false,
    responseStream,
    requestSerialize: (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
    requestDeserialize: (b: Buffer) => {
      try {
        return fromBinary(input, b);
      } catch {
        return undefined;
      }
    },
    responseSerialize: (m: MessageShape<O>) => Buffer.from(toBinary(output, m)),
    responseDeserialize: (b: Buffer) => fromBinary(output, b),
  } as grpc.MethodDefinition<unknown, unknown>;
}

const unreadable = (): Partial<grpc.StatusObject> => ({ code: grpc.status.INVALID_ARGUMENT, details: "The request could not be read." });

export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  /** Open Watch calls, by the (served) name they watch. */
  private readonly watchers = new Map<string, Set<grpc.ServerWritableStream<unknown, HealthCheckResponse>>>();

  /** `names`: the services served ("" is the server as a whole), all SERVING at first. */
  constructor(names: readonly string[]) {
    for (const n of names) this.statuses.set(n, ServingStatus.SERVING);
  }

  /** Sets every served name's status, telling their watchers of a change. */
  setAll(status: ServingStatus): void {
    for (const [name, was] of this.statuses) {
      if (was === status) continue;
      this.statuses.set(name, status);
      const answer = create(HealthCheckResponseSchema, { status });
      for (const w of this.watchers.get(name) ?? []) w.write(answer);
    }
  }

  /** Open Watch calls (for the test that none is kept for an unknown name). */
  watching(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  addToServer(server: grpc.Server): void {
    const m = Health.method;
    const at = (name: string) => `/${Health.typeName}/${name}`;
    const definition: grpc.ServiceDefinition = {
      Check: method(at(m.check.name), HealthCheckRequestSchema, HealthCheckResponseSchema, false),
      Watch: method(at(m.watch.name), HealthCheckRequestSchema, HealthCheckResponseSchema, true),
      List: method(at(m.list.name), HealthListRequestSchema, HealthListResponseSchema, false),
    };
    const handlers: grpc.UntypedServiceImplementation = {
      Check: (call: grpc.ServerUnaryCall<HealthCheckRequest | undefined, unknown>, done: grpc.sendUnaryData<unknown>) => {
        if (call.request === undefined) return done(unreadable());
        const status = this.statuses.get(call.request.service);
        if (status === undefined) return done({ code: grpc.status.NOT_FOUND, details: "No such service." });
        done(null, create(HealthCheckResponseSchema, { status }));
      },
      Watch: (call: grpc.ServerWritableStream<HealthCheckRequest | undefined, HealthCheckResponse>) => {
        if (call.request === undefined) {
          call.emit("error", unreadable());
          return;
        }
        const name = call.request.service;
        const status = this.statuses.get(name);
        // An unknown name stays unknown (the set is fixed at start): told once, nothing kept.
        call.write(create(HealthCheckResponseSchema, { status: status ?? ServingStatus.SERVICE_UNKNOWN }));
        if (status === undefined) return;
        let set = this.watchers.get(name);
        if (set === undefined) this.watchers.set(name, (set = new Set()));
        set.add(call);
        const forget = () => {
          set.delete(call);
          if (set.size === 0) this.watchers.delete(name);
        };
        call.on("cancelled", forget);
        call.on("close", forget);
        call.on("error", forget);
      },
      List: (_call: grpc.ServerUnaryCall<unknown, unknown>, done: grpc.sendUnaryData<unknown>) => {
        const statuses: Record<string, HealthCheckResponse> = {};
        for (const [name, status] of this.statuses) statuses[name] = create(HealthCheckResponseSchema, { status });
        done(null, create(HealthListResponseSchema, { statuses }));
      },
    };
    server.addService(definition, handlers);
  }
}
