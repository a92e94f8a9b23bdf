// gRPC server reflection (grpc.reflection.v1, and v1alpha, whose messages are
// the same bytes) on the gRPC port, so that grpcurl, Postman and other
// reflection-based tools list and call keyhold's services without the proto
// files. The files it hands out are the very descriptors the services are built
// from (gen/, protobuf-es), so what a tool sees is what the door decodes.
//
// Written here rather than taken from @grpc/reflection, grpc-node's package:
// that one works out a file's imports from the types its fields use, so an
// import used only for options was left out of its answers. Every keyhold
// request imports buf/validate/validate.proto for its field rules that way, and
// a client building descriptors from the answer (protobuf-es createFileRegistry,
// Go's protodesc) failed with "Cannot find buf/validate/validate.proto" (tried
// with @grpc/reflection 1.0.4). Here a file's imports are the ones it declares.
// The health service's file is keyhold's copy too (proto/grpc/health/v1):
// grpc-health-check's, as proto-loader rebuilds it, names its map entry
// `Statuses` instead of `StatusesEntry`, which Go's protodesc refuses.
import { create, type DescEnum, type DescFile, type DescMessage, type DescService, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";

/** Reflection streams open at once, over all connections. */
export const MAX_REFLECTION_STREAMS = 32;

/** The reflection service, v1 and v1alpha (same messages, another package name). */
export const REFLECTION_SERVICES = [ServerReflection.typeName, "grpc.reflection.v1alpha.ServerReflection"];

interface File {
  name: string;
  /** The serialised FileDescriptorProto. */
  bytes: Uint8Array;
  /** The names of the files it imports. */
  imports: string[];
}

/** What reflection answers from: files by name, the file declaring each symbol, extensions by type. */
class Index {
  readonly files = new Map<string, File>();
  readonly symbols = new Map<string, string>();
  readonly extensions = new Map<string, Map<number, string>>();

  /** A file from protobuf-es, with every file it imports and every name it declares. */
  addDesc(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, { name: file.proto.name, bytes: toBinary(FileDescriptorProtoSchema, file.proto), imports: file.proto.dependency });
    for (const d of file.dependencies) this.addDesc(d);
    const symbol = (name: string) => this.symbols.set(name, file.proto.name);
    // An enum's values are named in the scope that holds the enum, as protobuf scopes them.
    const enumeration = (e: DescEnum, scope: string): void => {
      symbol(e.typeName);
      for (const v of e.values) symbol(`${scope}${v.name}`);
    };
    const message = (m: DescMessage): void => {
      symbol(m.typeName);
      for (const f of m.fields) symbol(`${m.typeName}.${f.name}`);
      // Every oneof, the synthetic ones of proto3 `optional` fields too (protobuf-es leaves those out of m.oneofs).
      for (const o of m.proto.oneofDecl) symbol(`${m.typeName}.${o.name}`);
      // A map field's entry type and its fields, which protobuf-es does not list among the nested messages.
      for (const t of m.proto.nestedType) {
        if (t.options?.mapEntry !== true) continue;
        symbol(`${m.typeName}.${t.name}`);
        for (const f of t.field) symbol(`${m.typeName}.${t.name}.${f.name}`);
      }
      for (const n of m.nestedMessages) message(n);
      for (const e of m.nestedEnums) enumeration(e, `${m.typeName}.`);
      for (const x of m.nestedExtensions) this.addExtension(x.typeName, x.extendee.typeName, x.number, file.proto.name);
    };
    for (const m of file.messages) message(m);
    for (const e of file.enums) enumeration(e, file.proto.package === "" ? "" : `${file.proto.package}.`);
    for (const s of file.services) {
      symbol(s.typeName);
      for (const m of s.methods) symbol(`${s.typeName}.${m.name}`);
    }
    for (const x of file.extensions) this.addExtension(x.typeName, x.extendee.typeName, x.number, file.proto.name);
  }

  private addExtension(name: string, extendee: string, num: number, fileName: string): void {
    this.symbols.set(name, fileName);
    let byNumber = this.extensions.get(extendee);
    if (byNumber === undefined) this.extensions.set(extendee, (byNumber = new Map()));
    byNumber.set(num, fileName);
  }
}

const NOT_FOUND = grpc.status.NOT_FOUND;

/** One answer. `sent` holds the files this stream has sent: imports go once per stream, the file asked for always. */
function answer(index: Index, listed: string[], req: ServerReflectionRequest, sent: Set<string>): ServerReflectionResponse {
  const reply = (messageResponse: NonNullable<MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"]>) =>
    create(ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse });
  const notFound = (errorMessage: string) => reply({ case: "errorResponse", value: { errorCode: NOT_FOUND, errorMessage } });
  const filesFrom = (name: string) => {
    const out: Uint8Array[] = [];
    const visit = (n: string, asked: boolean) => {
      const f = index.files.get(n);
      if (f === undefined || (!asked && sent.has(n))) return;
      sent.add(n);
      out.push(f.bytes);
      for (const i of f.imports) visit(i, false);
    };
    visit(name, true);
    return reply({ case: "fileDescriptorResponse", value: { fileDescriptorProto: out } });
  };
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return reply({ case: "listServicesResponse", value: { service: listed.map((name) => ({ name })) } });
    case "fileByFilename":
      return index.files.has(r.value) ? filesFrom(r.value) : notFound(`No file named ${r.value}.`);
    case "fileContainingSymbol": {
      const file = index.symbols.get(r.value);
      return file === undefined ? notFound(`No symbol named ${r.value}.`) : filesFrom(file);
    }
    case "fileContainingExtension": {
      const file = index.extensions.get(r.value.containingType)?.get(r.value.extensionNumber);
      return file === undefined ? notFound(`No extension ${r.value.extensionNumber} of ${r.value.containingType}.`) : filesFrom(file);
    }
    case "allExtensionNumbersOfType": {
      if (!index.symbols.has(r.value)) return notFound(`No type named ${r.value}.`);
      const numbers = [...(index.extensions.get(r.value)?.keys() ?? [])].sort((a, b) => a - b);
      return reply({ case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } });
    }
    default:
      return reply({ case: "errorResponse", value: { errorCode: grpc.status.INVALID_ARGUMENT, errorMessage: "The request asks nothing." } });
  }
}

/**
 * Adds reflection, v1 and v1alpha, listing `services` and the health service.
 * The error detail types (google.rpc.Status, ErrorInfo, BadRequest;
 * keyhold.v2.ErrorDetail comes with the services) resolve by name too, so a
 * tool can print a failed call's details.
 */
export function addReflection(server: grpc.Server, services: DescService[]): void {
  const index = new Index();
  for (const s of services) index.addDesc(s.file);
  index.addDesc(file_google_rpc_status);
  index.addDesc(file_google_rpc_error_details);
  index.addDesc(file_grpc_health_v1_health);
  const listed = [...services.map((s) => s.typeName), Health.typeName];

  const method = ServerReflection.method.serverReflectionInfo;
  // Each open stream may hold an answer the client has not read (tens of KB), and
  // reflection needs no key: streams beyond this many at once are refused.
  let open = 0;
  const handler = (call: grpc.ServerDuplexStream<ServerReflectionRequest | undefined, ServerReflectionResponse>) => {
    if (open >= MAX_REFLECTION_STREAMS) {
      call.emit("error", {
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: `More than ${MAX_REFLECTION_STREAMS} reflection streams are open; try again later.`,
      });
      return;
    }
    open++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open--;
    };
    for (const event of ["finish", "close", "cancelled", "error"]) call.once(event, close);
    const sent = new Set<string>();
    call.on("data", (req: ServerReflectionRequest | undefined) => {
      const reply =
        req === undefined
          ? create(ServerReflectionResponseSchema, {
              messageResponse: { case: "errorResponse", value: { errorCode: grpc.status.INVALID_ARGUMENT, errorMessage: "The request could not be read." } },
            })
          : answer(index, listed, req, sent);
      // A client that asks without reading the answers is not read from until it does: answers do not pile up here.
      if (!call.write(reply)) {
        call.pause();
        call.once("drain", () => call.resume());
      }
    });
    call.on("end", () => call.end());
    // A client gone mid-stream: nothing to answer (and counted closed above).
    call.on("error", () => undefined);
  };
  for (const name of REFLECTION_SERVICES) {
    const definition: grpc.ServiceDefinition = {
      [method.name]: {
        path: `/${name}/${method.name}`,
        requestStream: true,
        responseStream: true,
        requestSerialize: (m: ServerReflectionRequest) => Buffer.from(toBinary(ServerReflectionRequestSchema, m)),
        // Bytes that do not decode are answered in the stream, as any other question without an answer.
        requestDeserialize: (b: Buffer) => {
          try {
            return fromBinary(ServerReflectionRequestSchema, b);
          } catch {
            return undefined;
          }
        },
        responseSerialize: (m: ServerReflectionResponse) => Buffer.from(toBinary(ServerReflectionResponseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(ServerReflectionResponseSchema, b),
      } as grpc.MethodDefinition<unknown, unknown>,
    };
    server.addService(definition, { [method.name]: handler as grpc.UntypedHandleCall });
  }
}
