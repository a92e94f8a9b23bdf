// The gRPC front door, seen from an ordinary grpc-js client that knows nothing
// but the .proto files: same operations, same errors (status code, the err:svc
// code in `error-code` metadata and in a google.rpc.Status detail), and the
// standard health service.
import fs from "node:fs";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { protoPath as healthProtoPath } from "grpc-health-check";
import type { RowDataPacket } from "mysql2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { generateRootKey } from "../../src/domain/auth/root-key.js";
import { decodeStatus, protoIncludeDirs } from "../grpc-client.js";
import { useHarness } from "../harness.js";

const PROTO_DIR = path.resolve(import.meta.dirname, "../../proto");
const files = fs
  .readdirSync(path.join(PROTO_DIR, "keyhold/v2"))
  .filter((f) => f.endsWith(".proto"))
  .map((f) => `keyhold/v2/${f}`);

const LOADER: protoLoader.Options = { includeDirs: protoIncludeDirs(), longs: String, keepCase: false, defaults: false, oneofs: true };

// biome-ignore lint/suspicious/noExplicitAny: dynamic clients from proto-loader
type Json = any;
type Call = (req: Json, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: Json) => void) => void;
type UnaryCall = (...args: Parameters<Call>) => grpc.ClientUnaryCall;

type Rpc = (method: string, req: Json, rootKey?: string | null) => Promise<Json>;

function rpcOf(client: grpc.Client): Rpc {
  return (method, req, rootKey) =>
    new Promise((resolve, reject) => {
      const md = new grpc.Metadata();
      if (rootKey) md.set("authorization", `Bearer ${rootKey}`);
      const fn = (client as unknown as Record<string, Call>)[method];
      if (typeof fn !== "function") throw new Error(`no method ${method}`);
      fn.call(client, req, md, (err, res) => (err ? reject(err) : resolve(res)));
    });
}

async function rejection(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error("expected the call to fail");
}

/** The err:svc code of a failed call, from both places the server puts it; they must agree. */
function errorCodeOf(err: grpc.ServiceError): string {
  const fromMetadata = err.metadata.get("error-code")[0];
  const bin = err.metadata.get("grpc-status-details-bin")[0];
  expect(bin, "grpc-status-details-bin trailer").toBeInstanceOf(Buffer);
  const status = decodeStatus(bin as Buffer);
  expect(status.code).toBe(err.code);
  expect(status.details.length).toBeGreaterThan(0);
  const any = status.details[0] as { typeUrl: string; value: Uint8Array };
  expect(any.typeUrl.endsWith("keyhold.v2.ErrorDetail"), any.typeUrl).toBe(true);
  const detail = fromBinary(ErrorDetailSchema, any.value);
  expect(detail.code).toBe(fromMetadata);
  return detail.code;
}

describe("gRPC front door", () => {
  const h = useHarness();
  let apis: grpc.Client;
  let keys: grpc.Client;
  let health: grpc.Client;
  let apisRpc: Rpc;
  let keysRpc: Rpc;
  let admin: string;

  beforeAll(async () => {
    const port = await h.grpcPort();
    const def = protoLoader.loadSync(files, LOADER);
    const pkg = grpc.loadPackageDefinition(def) as Json;
    const target = `127.0.0.1:${port}`;
    apis = new pkg.keyhold.v2.ApisService(target, grpc.credentials.createInsecure());
    keys = new pkg.keyhold.v2.KeysService(target, grpc.credentials.createInsecure());
    const healthDef = protoLoader.loadSync(healthProtoPath, { ...LOADER, includeDirs: [], enums: String });
    health = new (grpc.loadPackageDefinition(healthDef) as Json).grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    apisRpc = rpcOf(apis);
    keysRpc = rpcOf(keys);
    admin = await h.rootKey(["*"]);
  });

  afterAll(() => {
    apis?.close();
    keys?.close();
    health?.close();
  });

  it("loads every keyhold.v2 proto with proto-loader", () => {
    expect(files).toEqual(expect.arrayContaining(["keyhold/v2/apis_service.proto", "keyhold/v2/keys_service.proto", "keyhold/v2/errors.proto"]));
  });

  it("ApisService.CreateApi then GetApi", async () => {
    const created = await apisRpc("CreateApi", { name: "grpc-api" }, admin);
    expect(created.apiId).toMatch(/^api_/);
    expect(await apisRpc("GetApi", { apiId: created.apiId }, admin)).toEqual({ id: created.apiId, name: "grpc-api" });
  });

  it("KeysService.CreateKey, VerifyKey and GetKey", async () => {
    const { apiId } = await apisRpc("CreateApi", { name: "grpc-keys" }, admin);
    const expires = String(Date.now() + 3_600_000);
    const created = await keysRpc(
      "CreateKey",
      { apiId, prefix: "grpc", name: "over grpc", expires, credits: { remaining: "5" }, permissions: ["documents.read"] },
      admin,
    );
    expect(created.keyId).toMatch(/^key_/);
    expect(created.key).toMatch(/^grpc_/);

    const verified = await keysRpc("VerifyKey", { key: created.key, permissions: "documents.read" }, admin);
    expect(verified).toMatchObject({ valid: true, code: "VALID", keyId: created.keyId, name: "over grpc", credits: "4", expires, enabled: true });
    expect(verified.permissions).toEqual(["documents.read"]);

    const missing = await keysRpc("VerifyKey", { key: "grpc_nope" }, admin);
    // proto3: `valid: false` is the default value and is not on the wire (defaults: false).
    expect(missing).toMatchObject({ code: "NOT_FOUND" });
    expect(missing.valid ?? false).toBe(false);
    expect(missing.keyId).toBeUndefined();

    const got = await keysRpc("GetKey", { keyId: created.keyId }, admin);
    expect(got.key).toMatchObject({
      keyId: created.keyId,
      start: created.key.slice(0, 9),
      enabled: true,
      name: "over grpc",
      expires,
      credits: { remaining: "4" },
    });
    // The JSON API sees the same key the same way.
    const viaJson = await h.post("/v2/keys.getKey", { keyId: created.keyId }, admin);
    expect(viaJson.body.data).toMatchObject({ keyId: created.keyId, name: "over grpc", credits: { remaining: 4 } });
  });

  it("a change over gRPC is recorded with the peer's address, its user agent and the call's request id", async () => {
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${admin}`);
    const createApi = (apis as unknown as Record<string, UnaryCall>).CreateApi as UnaryCall;
    // The answer comes to the callback, the request id in the trailers (the call's status): both are awaited.
    let call: grpc.ClientUnaryCall | undefined;
    const answer = new Promise<string>((resolve, reject) => {
      call = createApi.call(apis, { name: "grpc-audited" }, md, (err, res) => (err ? reject(err) : resolve(res.apiId)));
    });
    const trailers = new Promise<string>((resolve) => call?.on("status", (s: grpc.StatusObject) => resolve(String(s.metadata.get("request-id")[0]))));
    const [apiId, requestId] = await Promise.all([answer, trailers]);
    expect(requestId).toMatch(/^req_/);
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT action, remote_address, user_agent FROM audit_logs WHERE request_id = ?", [requestId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action: "api.create", remote_address: "127.0.0.1" });
    expect(String(rows[0]?.user_agent)).toMatch(/^grpc-node-js\//);
    expect(apiId).toMatch(/^api_/);
  });

  it("a call without authorization metadata -> UNAUTHENTICATED with err:svc:authentication:missing", async () => {
    const err = await rejection(apisRpc("CreateApi", { name: "no-auth" }, null));
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:authentication:missing"]);
    expect(errorCodeOf(err)).toBe("err:svc:authentication:missing");
    expect(err.details).toBe("Credentials were not provided");
  });

  it("malformed and unknown root keys -> UNAUTHENTICATED with their own codes", async () => {
    const malformed = await rejection(
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set("authorization", `bearer ${admin}`);
        (apis as unknown as Record<string, Call>).GetApi?.call(apis, { apiId: "api_x00" }, md, (e, r) => (e ? reject(e) : resolve(r)));
      }),
    );
    expect(malformed.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(errorCodeOf(malformed)).toBe("err:svc:authentication:malformed");

    const unknown = await rejection(apisRpc("GetApi", { apiId: "api_x00" }, generateRootKey()));
    expect(unknown.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(errorCodeOf(unknown)).toBe("err:svc:authentication:key_not_found");
  });

  it("a root key lacking the permission -> PERMISSION_DENIED insufficient_permissions", async () => {
    const readOnly = await h.rootKey(["apis.*.read_api"]);
    const err = await rejection(apisRpc("CreateApi", { name: "denied" }, readOnly));
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(errorCodeOf(err)).toBe("err:svc:authorization:insufficient_permissions");
  });

  it("an unknown API or key -> NOT_FOUND with api_not_found / key_not_found", async () => {
    const api = await rejection(apisRpc("GetApi", { apiId: "api_doesnotexist0000" }, admin));
    expect(api.code).toBe(grpc.status.NOT_FOUND);
    expect(errorCodeOf(api)).toBe("err:svc:data:api_not_found");
    const key = await rejection(keysRpc("GetKey", { keyId: "key_doesnotexist0000" }, admin));
    expect(key.code).toBe(grpc.status.NOT_FOUND);
    expect(errorCodeOf(key)).toBe("err:svc:data:key_not_found");
  });

  it("invalid input -> INVALID_ARGUMENT invalid_input, with the field in the ErrorDetail", async () => {
    const err = await rejection(apisRpc("CreateApi", { name: "ab" }, admin));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(errorCodeOf(err)).toBe("err:svc:application:invalid_input");
    const any = decodeStatus(err.metadata.get("grpc-status-details-bin")[0] as Buffer).details[0] as { value: Uint8Array };
    const detail = fromBinary(ErrorDetailSchema, any.value);
    expect(detail.errors.some((e) => e.location.includes("name"))).toBe(true);
  });

  // keys.verifyKey refuses these before anything waits (its outcome is then no promise, services/types.ts Answer).
  it("VerifyKey's refusals made before any wait: PERMISSION_DENIED without a verify grant, INVALID_ARGUMENT for a tag holding the key", async () => {
    const { apiId } = await apisRpc("CreateApi", { name: "grpc-verify-refusals" }, admin);
    const { key } = await keysRpc("CreateKey", { apiId }, admin);
    expect(await keysRpc("VerifyKey", { key }, admin)).toMatchObject({ valid: true, code: "VALID" });
    const denied = await rejection(keysRpc("VerifyKey", { key }, await h.rootKey(["apis.*.read_api"])));
    expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(errorCodeOf(denied)).toBe("err:svc:authorization:insufficient_permissions");
    const invalid = await rejection(keysRpc("VerifyKey", { key, tags: [`k=${key}`] }, admin));
    expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
    const any = decodeStatus(invalid.metadata.get("grpc-status-details-bin")[0] as Buffer).details[0] as { value: Uint8Array };
    expect(fromBinary(ErrorDetailSchema, any.value).errors.map((e) => e.location)).toContain("body.tags[0]");
    expect(await keysRpc("VerifyKey", { key }, admin)).toMatchObject({ valid: true, code: "VALID" });
  });

  it("grpc.health.v1.Health/Check answers SERVING for the server and for each keyhold service", async () => {
    const check = (service: string) =>
      new Promise<Json>((resolve, reject) =>
        (health as unknown as Record<string, (req: Json, cb: (e: Error | null, r: Json) => void) => void>).Check?.call(health, { service }, (e, r) =>
          e ? reject(e) : resolve(r),
        ),
      );
    expect(await check("")).toEqual({ status: "SERVING" });
    expect(await check("keyhold.v2.KeysService")).toEqual({ status: "SERVING" });
    expect(await check("keyhold.v2.ApisService")).toEqual({ status: "SERVING" });
  });
});
