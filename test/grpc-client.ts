// A gRPC client built only from the .proto files (proto-loader), as any gRPC user
// would build one, plus small call helpers shared by the gRPC tests.
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { projectDir } from "../src/paths.js";

// biome-ignore lint/suspicious/noExplicitAny: clients generated at run time from the .proto files
export type Client = any;

/** The keyhold.v2 service constructors of these proto files (e.g. "keys_service.proto"). */
export function loadServices(...files: string[]): Record<string, grpc.ServiceClientConstructor> {
  const protoDir = path.join(projectDir, "proto");
  const def = protoLoader.loadSync(
    files.map((f) => path.join(protoDir, "keyhold/v2", f)),
    { includeDirs: [protoDir], keepCase: false, longs: String, defaults: true },
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
