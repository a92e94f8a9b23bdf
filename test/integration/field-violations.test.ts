// Field errors over gRPC and Connect arrive twice: in keyhold.v2.ErrorDetail,
// located in the JSON door's terms (`body.apiId`), and as the standard
// google.rpc.BadRequest that Go, Python and Java clients read with their own
// googleapis types, located by proto path (`api_id`). An error that is not about
// fields carries no BadRequest. Every error also carries google.rpc.ErrorInfo
// (reason = the error code, domain `keyhold`, metadata.requestId), second.
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Client, Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { connectError } from "../connect-clients.js";
import { bearer, call, decodeStatus, errorDetailOf, failure, type Client as GrpcClient, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";

const ERROR_DETAIL_URL = "type.googleapis.com/keyhold.v2.ErrorDetail";
const BAD_REQUEST_URL = "type.googleapis.com/google.rpc.BadRequest";
const ERROR_INFO_URL = "type.googleapis.com/google.rpc.ErrorInfo";

/**
 * google.rpc.BadRequest{field_violations = 1: FieldViolation{field = 1, description = 2}},
 * read by hand with the public googleapis field numbers rather than with gen/:
 * a proto/google/rpc/error_details.proto renumbered by mistake fails here.
 */
function readBadRequest(bytes: Uint8Array): Array<{ field: string; description: string }> {
  const out: Array<{ field: string; description: string }> = [];
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    if (no !== 1) {
      r.skip(wire);
      continue;
    }
    const v = { field: "", description: "" };
    const f = new BinaryReader(r.bytes());
    while (f.pos < f.len) {
      const [n, w] = f.tag();
      if (n === 1) v.field = f.string();
      else if (n === 2) v.description = f.string();
      else f.skip(w);
    }
    out.push(v);
  }
  return out;
}

/** google.rpc.ErrorInfo{reason = 1, domain = 2, metadata = 3 (map<string, string>: entries of key = 1, value = 2)}, read the same way. */
function readErrorInfo(bytes: Uint8Array): { reason: string; domain: string; metadata: Record<string, string> } {
  const out = { reason: "", domain: "", metadata: {} as Record<string, string> };
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    if (no === 1) out.reason = r.string();
    else if (no === 2) out.domain = r.string();
    else if (no === 3) {
      const e = new BinaryReader(r.bytes());
      let key = "";
      let value = "";
      while (e.pos < e.len) {
        const [n, w] = e.tag();
        if (n === 1) key = e.string();
        else if (n === 2) value = e.string();
        else e.skip(w);
      }
      out.metadata[key] = value;
    } else r.skip(wire);
  }
  return out;
}

// apiId too short, and one problem in each of a nested message and a list item.
const BAD_CREATE = { apiId: "a!", credits: { remaining: -1 }, ratelimits: [{ name: "ab", limit: 10, duration: 60_000 }] };
const JSON_LOCATIONS = ["body.apiId", "body.credits.remaining", "body.ratelimits[0].name"];
const PROTO_PATHS = ["api_id", "credits.remaining", "ratelimits[0].name"];

/** Each violation's description names its field by the same proto path. */
function expectNamed(violations: Array<{ field: string; description: string }>): void {
  for (const v of violations) expect(v.description.startsWith(`${v.field} `), `${v.field}: ${v.description}`).toBe(true);
}

describe("field violations as google.rpc.BadRequest", () => {
  const h = useHarness();
  let admin: string;

  beforeAll(async () => {
    admin = await h.rootKey(["*"]);
  });

  describe("over gRPC (grpc-js, proto-loader)", () => {
    let keys: GrpcClient;

    beforeAll(async () => {
      const port = await h.grpcPort();
      keys = new (service(loadServices("keys_service.proto"), "KeysService"))(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    });

    afterAll(() => keys?.close());

    it("createKey with a bad api_id and bad nested fields: BadRequest by proto path, beside ErrorDetail", async () => {
      const req = { ...BAD_CREATE, credits: { remaining: "-1" }, ratelimits: [{ name: "ab", limit: "10", duration: "60000" }] };
      const err = await failure(call(keys, "createKey", req, bearer(admin)));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      const bin = err.metadata.get("grpc-status-details-bin")[0] as Buffer;
      const status = decodeStatus(bin);
      // ErrorDetail stays first: clients that read only the first detail keep reading the code.
      expect(status.details.map((d) => d.typeUrl)).toEqual([ERROR_DETAIL_URL, ERROR_INFO_URL, BAD_REQUEST_URL]);
      expect(errorDetailOf(bin)?.errors.map((e) => e.location)).toEqual(JSON_LOCATIONS);

      const violations = readBadRequest((status.details[2] as { value: Uint8Array }).value);
      expect(violations.map((v) => v.field)).toEqual(PROTO_PATHS);
      expectNamed(violations);
      expect(violations[0]?.description).toBe("api_id must be at least 3 characters long (got 2).");
    });

    it("an error about no field (404) carries ErrorDetail and ErrorInfo, no BadRequest", async () => {
      const err = await failure(call(keys, "getKey", { keyId: "key_doesnotexist0000" }, bearer(admin)));
      expect(err.code).toBe(grpc.status.NOT_FOUND);
      const bin = err.metadata.get("grpc-status-details-bin")[0] as Buffer;
      expect(decodeStatus(bin).details.map((d) => d.typeUrl)).toEqual([ERROR_DETAIL_URL, ERROR_INFO_URL]);
      // ErrorInfo decoded by the public field numbers: reason 1, domain 2, metadata 3 (map entries key 1, value 2).
      const info = readErrorInfo((decodeStatus(bin).details[1] as { value: Uint8Array }).value);
      expect(info).toEqual({
        reason: "err:svc:data:key_not_found",
        domain: "keyhold",
        metadata: { requestId: err.metadata.get("request-id")[0] },
      });
    });
  });

  describe("over Connect (@connectrpc/connect)", () => {
    let keys: Client<typeof KeysService>;
    let apis: Client<typeof ApisService>;
    let baseUrl: string;
    const auth = () => ({ headers: { authorization: `Bearer ${admin}` } });

    beforeAll(async () => {
      await h.app.listen({ port: 0, host: "127.0.0.1" });
      baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
      const transport = createConnectTransport({ httpVersion: "1.1", baseUrl });
      keys = createClient(KeysService, transport);
      apis = createClient(ApisService, transport);
    });

    it("createKey with a bad api_id and bad nested fields: BadRequest by proto path, beside ErrorDetail", async () => {
      const req = { ...BAD_CREATE, credits: { remaining: -1n }, ratelimits: [{ name: "ab", limit: 10n, duration: 60_000n }] };
      const err = await connectError(keys.createKey(req, auth()));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.findDetails(ErrorDetailSchema)[0]?.errors.map((e) => e.location)).toEqual(JSON_LOCATIONS);
      const [badRequest, ...more] = err.findDetails(BadRequestSchema);
      expect(more).toEqual([]);
      const violations = (badRequest?.fieldViolations ?? []).map(({ field, description }) => ({ field, description }));
      expect(violations.map((v) => v.field)).toEqual(PROTO_PATHS);
      expectNamed(violations);
    });

    it("an update's Nullable wrapper is in the path: JSON `name` is proto `name.value`", async () => {
      const err = await connectError(keys.updateKey({ keyId: "key_doesnotexist0000", name: { value: "" } }, auth()));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.findDetails(ErrorDetailSchema)[0]?.errors.map((e) => e.location)).toEqual(["body.name"]);
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["name.value"]);
    });

    it("an unknown JSON field is a violation of the message itself (field ''), in the caller's words", async () => {
      const { apiId } = await apis.createApi({ name: "violations" }, auth());
      const res = await fetch(`${baseUrl}/keyhold.v2.KeysService/CreateKey`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${admin}` },
        body: JSON.stringify({ apiId, expire: 1 }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { code: string; details: Array<{ type: string; value: string }> };
      expect(body.code).toBe("invalid_argument");
      expect(body.details.map((d) => d.type)).toEqual(["keyhold.v2.ErrorDetail", "google.rpc.ErrorInfo", "google.rpc.BadRequest"]);
      const badRequest = fromBinary(BadRequestSchema, Buffer.from(body.details[2]?.value ?? "", "base64"));
      expect(badRequest.fieldViolations.map(({ field, description }) => ({ field, description }))).toEqual([
        { field: "", description: "expire is not a known field of this request." },
      ]);
    });

    it("an error about no field (404) carries no BadRequest", async () => {
      const err = await connectError(keys.getKey({ keyId: "key_doesnotexist0000" }, auth()));
      expect(err.code).toBe(Code.NotFound);
      expect(err.findDetails(ErrorDetailSchema)[0]?.code).toBe("err:svc:data:key_not_found");
      expect(err.findDetails(BadRequestSchema)).toEqual([]);
      expect(err.findDetails(ErrorInfoSchema)).toEqual([
        expect.objectContaining({ reason: "err:svc:data:key_not_found", domain: "keyhold", metadata: { requestId: err.metadata.get("x-request-id") } }),
      ]);
    });
  });
});
