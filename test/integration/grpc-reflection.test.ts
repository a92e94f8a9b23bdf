// gRPC server reflection, as grpcurl and other reflection-based tools use it: a
// client that has no proto file asks the server which services it has, fetches
// the descriptors of keyhold.v2.KeysService, builds a client from them and calls
// VerifyKey; a failed call's details are decoded from descriptors fetched the
// same way. Both published versions (v1 and v1alpha) answer alike, and
// GRPC_REFLECTION=false turns both off.
import http2 from "node:http2";
import path from "node:path";
import { create, createFileRegistry, type FileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyUnpack, type FileDescriptorProto, FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ServerReflectionRequestSchema, ServerReflectionResponseSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { MAX_REFLECTION_STREAMS } from "../../src/grpc/reflection.js";
import { startGrpcServer } from "../../src/grpc/server.js";
import { projectDir } from "../../src/paths.js";
import { services } from "../../src/server/registry.js";
import { uid } from "../contract/shared/helpers.js";
import { peakRssOf, resetPeak, rssOf } from "../doors/attacks.js";
import { api, key } from "../fixtures.js";
import { bearer, call, KEYHOLD_SERVICES, loadServices, service } from "../grpc-client.js";
import { DOCS, useHarness } from "../harness.js";
import { dropDatabase, type ServerProcess, startServer } from "../server-process.js";

const h = useHarness();

// The client knows only gRPC's published reflection messages (proto/grpc/reflection/v1,
// the same as gRPC's own; v1alpha is the same messages under another package).
type Version = "v1" | "v1alpha";

// biome-ignore lint/suspicious/noExplicitAny: messages of a client built at run time
type Json = any;

function reflectionClient(version: Version, port: number): grpc.Client {
  const def = protoLoader.loadSync(path.join(projectDir, "proto/grpc/reflection/v1/reflection.proto"), { keepCase: false, longs: String, oneofs: true });
  const v1 = def["grpc.reflection.v1.ServerReflection"] as grpc.ServiceDefinition;
  const service = Object.fromEntries(
    Object.entries(v1).map(([name, m]) => [name, { ...m, path: m.path.replace("grpc.reflection.v1.", `grpc.reflection.${version}.`) }]),
  ) as grpc.ServiceDefinition;
  const Ctor = grpc.makeGenericClientConstructor(service, "ServerReflection");
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

/** Requests on one ServerReflectionInfo stream, and their answers in order. */
function askAll(client: grpc.Client, requests: Json[]): Promise<Json[]> {
  return new Promise((resolve, reject) => {
    const stream = (client as Json).serverReflectionInfo() as grpc.ClientDuplexStream<Json, Json>;
    const answers: Json[] = [];
    stream.on("data", (m: Json) => {
      answers.push(m);
      if (answers.length === requests.length) stream.end();
    });
    stream.on("error", reject);
    stream.on("end", () => resolve(answers));
    for (const r of requests) stream.write({ host: "", ...r });
  });
}

/** One request on its own stream, and its answer. */
const ask = async (client: grpc.Client, request: Json): Promise<Json> => (await askAll(client, [request]))[0];

const fileNames = (answer: Json): string[] =>
  (answer.fileDescriptorResponse.fileDescriptorProto as Buffer[]).map((b) => fromBinary(FileDescriptorProtoSchema, b).name);

/**
 * The files some symbols need, fetched by reflection (each answer holds the file
 * asked for first, then its imports), as a FileDescriptorSet in import order.
 */
async function descriptorsOf(client: grpc.Client, ...symbols: string[]): Promise<Uint8Array> {
  const files = new Map<string, FileDescriptorProto>();
  for (const symbol of symbols) {
    const answer = await ask(client, { fileContainingSymbol: symbol });
    expect(answer.errorResponse, symbol).toBeUndefined();
    for (const bin of answer.fileDescriptorResponse.fileDescriptorProto as Buffer[]) {
      const file = fromBinary(FileDescriptorProtoSchema, bin);
      files.set(file.name, file);
    }
  }
  const ordered: FileDescriptorProto[] = [];
  const place = (name: string) => {
    const file = files.get(name);
    if (file === undefined || ordered.includes(file)) return;
    for (const d of file.dependency) place(d);
    ordered.push(file);
  };
  for (const name of files.keys()) place(name);
  return toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: ordered }));
}

describe("gRPC server reflection", () => {
  let port: number;
  let rootKey: string;
  let presented: string;

  beforeAll(async () => {
    port = await h.grpcPort();
    rootKey = await h.rootKey(["apis.*.create_api", "apis.*.create_key", "apis.*.verify_key"]);
    presented = (await key(h, rootKey, await api(h, rootKey))).key;
  });

  for (const version of ["v1", "v1alpha"] as const) {
    describe(version, () => {
      let client: grpc.Client;
      beforeAll(() => {
        client = reflectionClient(version, port);
      });
      afterAll(() => client.close());

      it("lists the services this port serves, and not the Connect-only dashboard", async () => {
        const answer = await ask(client, { listServices: "*" });
        const names = (answer.listServicesResponse.service as Array<{ name: string }>).map((s) => s.name).sort();
        expect(names).toEqual([...KEYHOLD_SERVICES, "grpc.health.v1.Health"].sort());
      });

      it("gives KeysService's descriptors, from which a client calls VerifyKey", async () => {
        const set = await descriptorsOf(client, "keyhold.v2.KeysService");
        const def = protoLoader.loadFileDescriptorSetFromBuffer(Buffer.from(set), { keepCase: false, longs: String, defaults: true });
        const Keys = (grpc.loadPackageDefinition(def) as Json).keyhold.v2.KeysService as grpc.ServiceClientConstructor;
        const keys = new Keys(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as Json;
        const md = new grpc.Metadata();
        md.set("authorization", `Bearer ${rootKey}`);
        const reply = await new Promise<Json>((resolve, reject) =>
          keys.verifyKey({ key: presented }, md, (err: Error | null, r: Json) => (err ? reject(err) : resolve(r))),
        );
        keys.close();
        expect(reply).toMatchObject({ valid: true, code: "VALID" });
      });

      it("resolves the error detail types, so a failed call's details decode from reflection alone", async () => {
        const registry: FileRegistry = createFileRegistry(
          fromBinary(FileDescriptorSetSchema, await descriptorsOf(client, "keyhold.v2.KeysService", "google.rpc.Status", "google.rpc.ErrorInfo")),
        );
        const Keys = grpc.makeGenericClientConstructor({}, "KeysService");
        const raw = new Keys(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
        const md = new grpc.Metadata();
        md.set("authorization", `Bearer ${rootKey}`);
        const req = registry.getMessage("keyhold.v2.GetKeyRequest");
        if (req === undefined) throw new Error("keyhold.v2.GetKeyRequest not resolved");
        const bytes = Buffer.from(toBinary(req, create(req, { keyId: "key_doesnotexist0000" })));
        const err = await new Promise<grpc.ServiceError>((resolve) =>
          raw.makeUnaryRequest(
            "/keyhold.v2.KeysService/GetKey",
            (b: Buffer) => b,
            (b: Buffer) => b,
            bytes,
            md,
            (e) => resolve(e as grpc.ServiceError),
          ),
        );
        raw.close();
        expect(err.code).toBe(grpc.status.NOT_FOUND);
        const statusDesc = registry.getMessage("google.rpc.Status");
        if (statusDesc === undefined) throw new Error("google.rpc.Status not resolved");
        const status = fromBinary(statusDesc, err.metadata.get("grpc-status-details-bin")[0] as Buffer) as Json;
        const details = (status.details as Json[]).map((a) => anyUnpack(a, registry) as Json);
        expect(details.map((d) => d.$typeName)).toEqual(["keyhold.v2.ErrorDetail", "google.rpc.ErrorInfo"]);
        expect(details[1]).toMatchObject({ reason: "err:svc:data:key_not_found", domain: "keyhold", metadata: { requestId: details[0].requestId } });
      });

      it("finds every kind of name: field, nested enum value, top-level enum value, map entry and its fields, synthetic oneof, method", async () => {
        const cases = {
          "keyhold.v2.VerifyKeyRequest.key": "keyhold/v2/keys_service.proto",
          "grpc.health.v1.HealthCheckResponse.SERVING": "grpc/health/v1/health.proto",
          "google.protobuf.NULL_VALUE": "google/protobuf/struct.proto",
          "google.rpc.ErrorInfo.MetadataEntry": "google/rpc/error_details.proto",
          "grpc.health.v1.HealthListResponse.StatusesEntry.key": "grpc/health/v1/health.proto",
          // The oneof a proto3 `optional` field makes.
          "keyhold.v2.ApisServiceListKeysRequest._limit": "keyhold/v2/apis_service.proto",
          "grpc.health.v1.Health.Watch": "grpc/health/v1/health.proto",
        };
        for (const [symbol, file] of Object.entries(cases)) expect(fileNames(await ask(client, { fileContainingSymbol: symbol }))[0], symbol).toBe(file);
      });

      it("answers an unknown symbol or file with NOT_FOUND in the stream, not a failed call", async () => {
        for (const request of [{ fileContainingSymbol: "keyhold.v2.NoSuchService" }, { fileByFilename: "keyhold/v2/nope.proto" }]) {
          const answer = await ask(client, request);
          expect(answer.errorResponse?.errorCode, JSON.stringify(request)).toBe(grpc.status.NOT_FOUND);
        }
      });

      it("finds a file by its name, with its imports (protovalidate's included)", async () => {
        const names = fileNames(await ask(client, { fileByFilename: "keyhold/v2/keys_service.proto" }));
        expect(names[0]).toBe("keyhold/v2/keys_service.proto");
        expect(names).toEqual(expect.arrayContaining(["buf/validate/validate.proto", "google/protobuf/descriptor.proto"]));
      });
    });
  }

  it("the dashboard's service, Connect-only, is not served over gRPC either: UNIMPLEMENTED", async () => {
    const raw = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const id = (b: Buffer) => b;
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      raw.makeUnaryRequest("/keyhold.dashboard.v1.DashboardService/ListWorkspaces", id, id, Buffer.alloc(0), bearer(rootKey), (e) => resolve(e)),
    );
    raw.close();
    expect(err?.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("on one stream, each import is sent once; the file asked for always", async () => {
    const client = reflectionClient("v1", port);
    const [keys, apis, again] = await askAll(client, [
      { fileContainingSymbol: "keyhold.v2.KeysService" },
      { fileContainingSymbol: "keyhold.v2.ApisService" },
      { fileContainingSymbol: "keyhold.v2.KeysService.VerifyKey" },
    ]);
    client.close();
    const first = fileNames(keys);
    expect(first).toContain("buf/validate/validate.proto");
    const second = fileNames(apis);
    expect(second[0]).toBe("keyhold/v2/apis_service.proto");
    expect(second.filter((n) => first.includes(n))).toEqual([]);
    expect(fileNames(again)).toEqual(["keyhold/v2/keys_service.proto"]);
  });

  it("a question that does not decode is answered INVALID_ARGUMENT in the stream, which goes on", async () => {
    const id = (b: Buffer) => b;
    const raw = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const stream = raw.makeBidiStreamRequest("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", id, id);
    const answers: Buffer[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (b: Buffer) => {
        answers.push(b);
        if (answers.length === 2) stream.end();
      });
      stream.on("error", reject);
      stream.on("end", resolve);
    });
    stream.write(Buffer.from([0x1a, 0x05, 0x61])); // file_by_filename claiming 5 bytes, holding 1
    stream.write(
      Buffer.from(toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "*" } }))),
    );
    await done;
    raw.close();
    const [bad, good] = answers.map((b) => fromBinary(ServerReflectionResponseSchema, b));
    expect(bad?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: grpc.status.INVALID_ARGUMENT } });
    expect(good?.messageResponse.case).toBe("listServicesResponse");
  });

  it(`at most ${MAX_REFLECTION_STREAMS} reflection streams at once: the next is RESOURCE_EXHAUSTED, and a place frees when one ends`, async () => {
    const client = reflectionClient("v1", port);
    const open: grpc.ClientDuplexStream<Json, Json>[] = [];
    for (let i = 0; i < MAX_REFLECTION_STREAMS; i++) {
      const stream = (client as Json).serverReflectionInfo() as grpc.ClientDuplexStream<Json, Json>;
      stream.on("error", () => undefined);
      const first = new Promise((resolve) => stream.once("data", resolve));
      stream.write({ listServices: "*" });
      await first; // its handler runs: the stream holds its place
      open.push(stream);
    }
    const refused = await ask(client, { listServices: "*" }).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(refused?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    for (const s of open) s.end();
    let answer: Json;
    for (let i = 0; i < 50 && answer === undefined; i++) {
      answer = await ask(client, { listServices: "*" }).catch(() => undefined);
      if (answer === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    client.close();
    expect(answer?.listServicesResponse?.service.length).toBe(KEYHOLD_SERVICES.length + 1);
  });

  it("GRPC_REFLECTION=false: both versions answer UNIMPLEMENTED, and the services still serve", async () => {
    const server = await startGrpcServer(h.deps, services(h.deps), {
      docsBase: DOCS,
      host: "127.0.0.1",
      port: 0,
      bodyLimitBytes: h.config.bodyLimitBytes,
      reflection: false,
    });
    try {
      for (const version of ["v1", "v1alpha"] as const) {
        const client = reflectionClient(version, server.port);
        const err = await ask(client, { listServices: "*" }).then(
          () => undefined,
          (e: grpc.ServiceError) => e,
        );
        client.close();
        expect(err?.code, version).toBe(grpc.status.UNIMPLEMENTED);
      }
      const keys = new (service(loadServices("keys_service.proto"), "KeysService"))(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
      expect(await call(keys, "verifyKey", { key: presented }, bearer(rootKey))).toMatchObject({ valid: true, code: "VALID" });
      keys.close();
    } finally {
      await server.close(1_000);
    }
  });
});

/** A gRPC frame asking for validate.proto by name: the largest answer (55 KB) for a question of a few bytes. */
const VALIDATE_QUESTION = (() => {
  const question = toBinary(
    ServerReflectionRequestSchema,
    create(ServerReflectionRequestSchema, { messageRequest: { case: "fileByFilename", value: "buf/validate/validate.proto" } }),
  );
  const frame = Buffer.alloc(5 + question.length);
  frame.writeUInt32BE(question.length, 1);
  frame.set(question, 5);
  return frame;
})();

/** A raw HTTP/2 reflection stream, read or not as the test decides. */
const reflectionStream = (session: http2.ClientHttp2Session): http2.ClientHttp2Stream =>
  session.request({
    ":method": "POST",
    ":path": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "content-type": "application/grpc",
    te: "trailers",
  });

describe("gRPC server reflection, against a client that asks without reading", () => {
  const database = `keyhold_t_${uid("reflection_flood")}`;
  let server: ServerProcess;

  beforeAll(async () => {
    const u = new URL(inject("mysqlServer"));
    u.pathname = `/${database}`;
    server = await startServer(u.toString());
  }, 60_000);

  afterAll(async () => {
    await server?.kill();
    await dropDatabase(inject("mysqlServer"), database);
  });

  it("many streams on one connection, each asking without reading: the server's memory stays bounded", async () => {
    const pid = server.proc.pid as number;
    // Peak RSS +13.9 MiB; +68.3 MiB without the cap on open reflection streams (with grpc.max_concurrent_streams at 1,000),
    // and 67 -> 256 MiB in review before either.
    const before = rssOf(pid);
    resetPeak(pid);
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    session.on("error", () => undefined);
    const streams: http2.ClientHttp2Stream[] = [];
    for (let i = 0; i < 2_000; i++) {
      const stream = reflectionStream(session);
      stream.on("error", () => undefined);
      stream.pause();
      stream.write(VALIDATE_QUESTION);
      streams.push(stream);
    }
    await new Promise((r) => setTimeout(r, 3_000));
    const growth = peakRssOf(pid) - before;
    session.destroy();
    expect(growth, `peak RSS grew by ${(growth / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(32 * 2 ** 20);
  });

  it("stops reading its questions once answers wait: the server's memory stays bounded", async () => {
    const pid = server.proc.pid as number;
    // 200,000 questions of a few bytes, each answered with validate.proto (55 KB). Measured: peak RSS +4.6 MiB;
    // +84.8 MiB in the same 3 s when answers were written without waiting for the client.
    const before = rssOf(pid);
    resetPeak(pid);
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    const stream = reflectionStream(session);
    stream.pause(); // never read: HTTP/2 flow control then holds the server's answers back
    stream.write(Buffer.concat(Array.from({ length: 200_000 }, () => VALIDATE_QUESTION)));
    await new Promise((r) => setTimeout(r, 3_000));
    const growth = peakRssOf(pid) - before;
    stream.destroy();
    session.destroy();
    expect(growth, `peak RSS grew by ${(growth / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(32 * 2 ** 20);
  });
});
