// A gRPC client built only from the .proto files (proto-loader), as any gRPC user
// would build one, plus small call helpers shared by the gRPC tests.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type ErrorInfo, ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { type ErrorDetail, ErrorDetailSchema } from "../gen/keyhold/v2/errors_pb.js";
import { projectDir } from "../src/paths.js";

// biome-ignore lint/suspicious/noExplicitAny: clients generated at run time from the .proto files
export type Client = any;

/**
 * proto/ and .buf-deps/, the include path every reader of proto/ needs: the protos
 * import protovalidate's buf/validate/validate.proto, which scripts/buf-deps.mjs
 * writes there from the npm package.
 */
export function protoIncludeDirs(): string[] {
  execFileSync(process.execPath, [path.join(projectDir, "scripts", "buf-deps.mjs")], { stdio: "ignore" });
  return [path.join(projectDir, "proto"), path.join(projectDir, ".buf-deps")];
}

/** The keyhold.v2 services the gRPC port serves (and reflection lists), sorted. */
export const KEYHOLD_SERVICES = [
  "keyhold.v2.AnalyticsService",
  "keyhold.v2.ApisService",
  "keyhold.v2.AuditLogsService",
  "keyhold.v2.IdentitiesService",
  "keyhold.v2.KeysService",
  "keyhold.v2.PermissionsService",
  "keyhold.v2.RatelimitService",
  "keyhold.v2.RootKeysService",
];

/** The keyhold.v2 service constructors of these proto files (e.g. "keys_service.proto"). */
export function loadServices(...files: string[]): Record<string, grpc.ServiceClientConstructor> {
  const protoDir = path.join(projectDir, "proto");
  const def = protoLoader.loadSync(
    files.map((f) => path.join(protoDir, "keyhold/v2", f)),
    { includeDirs: protoIncludeDirs(), keepCase: false, longs: String, defaults: true },
  );
  const pkg = grpc.loadPackageDefinition(def) as unknown as { keyhold: { v2: Record<string, grpc.ServiceClientConstructor> } };
  return pkg.keyhold.v2;
}

/** One service constructor, failing clearly when the proto package lacks it. */
export function service(services: Record<string, grpc.ServiceClientConstructor>, name: string): grpc.ServiceClientConstructor {
  const s = services[name];
  if (!s) throw new Error(`${name} missing from the proto package`);
  return s;
}

export function call<T>(client: Client, method: string, req: unknown, metadata: grpc.Metadata): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](req, metadata, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
  });
}

/** The error of a call that must fail. */
export async function failure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error("expected the call to fail");
}

export const bearer = (key: string): grpc.Metadata => {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${key}`);
  return md;
};

/** google.rpc.Status{code=1, message=2, details=3 (repeated Any{type_url=1, value=2})}, read by hand. */
export function decodeStatus(buf: Uint8Array): { code: number; message: string; details: Array<{ typeUrl: string; value: Uint8Array }> } {
  const out = { code: 0, message: "", details: [] as Array<{ typeUrl: string; value: Uint8Array }> };
  const r = new BinaryReader(buf);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) out.code = r.int32();
    else if (field === 2) out.message = r.string();
    else if (field === 3) {
      const any = new BinaryReader(r.bytes());
      const d: { typeUrl: string; value: Uint8Array } = { typeUrl: "", value: new Uint8Array() };
      while (any.pos < any.len) {
        const [f, w] = any.tag();
        if (f === 1) d.typeUrl = any.string();
        else if (f === 2) d.value = any.bytes();
        else any.skip(w);
      }
      out.details.push(d);
    } else r.skip(wire);
  }
  return out;
}

/** The google.rpc.ErrorInfo in a grpc-status-details-bin value, if it carries one. */
export function errorInfoOf(bin: Uint8Array): ErrorInfo | undefined {
  const any = decodeStatus(bin).details.find((d) => d.typeUrl === `type.googleapis.com/${ErrorInfoSchema.typeName}`);
  return any === undefined ? undefined : fromBinary(ErrorInfoSchema, any.value);
}

/** The keyhold.v2.ErrorDetail in a grpc-status-details-bin value, if it carries one. */
export function errorDetailOf(bin: Uint8Array): ErrorDetail | undefined {
  const any = decodeStatus(bin).details.find((d) => d.typeUrl === `type.googleapis.com/${ErrorDetailSchema.typeName}`);
  return any === undefined ? undefined : fromBinary(ErrorDetailSchema, any.value);
}
