// The Connect protocol on the HTTP port, called by a connect-node client built
// from gen/: same operations as the JSON API, and errors that carry the err:svc
// code in an ErrorDetail (findDetails), exactly as the JSON envelope's type does.
import type { AddressInfo } from "node:net";
import { type Client, Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import { generateRootKey } from "../../src/domain/auth/root-key.js";
import { connectError } from "../connect-clients.js";
import { useHarness } from "../harness.js";

const codeOf = (err: ConnectError): string | undefined => err.findDetails(ErrorDetailSchema)[0]?.code;

describe("Connect protocol on the HTTP port", () => {
  const h = useHarness();
  let apis: Client<typeof ApisService>;
  let keys: Client<typeof KeysService>;
  let permissions: Client<typeof PermissionsService>;
  let admin: string;
  const auth = (rootKey: string) => ({ headers: { authorization: `Bearer ${rootKey}` } });

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = h.app.server.address() as AddressInfo;
    const transport = createConnectTransport({ httpVersion: "1.1", baseUrl: `http://127.0.0.1:${port}` });
    apis = createClient(ApisService, transport);
    keys = createClient(KeysService, transport);
    permissions = createClient(PermissionsService, transport);
    admin = await h.rootKey(["*"]);
  });

  it("CreateApi and GetApi with a root key", async () => {
    const created = await apis.createApi({ name: "connect-api" }, auth(admin));
    expect(created.apiId).toMatch(/^api_/);
    const got = await apis.getApi({ apiId: created.apiId }, auth(admin));
    expect({ id: got.id, name: got.name }).toEqual({ id: created.apiId, name: "connect-api" });
  });

  it("CreateKey and VerifyKey", async () => {
    const { apiId } = await apis.createApi({ name: "connect-keys" }, auth(admin));
    const { keyId, key } = await keys.createKey({ apiId, prefix: "cn", credits: { remaining: 2n } }, auth(admin));
    const v = await keys.verifyKey({ key }, auth(admin));
    expect({ valid: v.valid, code: v.code, keyId: v.keyId, credits: v.credits }).toEqual({ valid: true, code: "VALID", keyId, credits: 1n });
    const missing = await keys.verifyKey({ key: "cn_nope" }, auth(admin));
    expect({ valid: missing.valid, code: missing.code, keyId: missing.keyId }).toEqual({ valid: false, code: "NOT_FOUND", keyId: undefined });
  });

  it("SetRolePermissions replaces a role's permissions; an unknown role -> NotFound role_not_found", async () => {
    const { roleId } = await permissions.createRole({ name: "connect-role", permissions: ["c.old"] }, auth(admin));
    const set = await permissions.setRolePermissions({ roleId, permissions: ["c.new"] }, auth(admin));
    expect(set.permissions.map((p) => p.slug)).toEqual(["c.new"]);
    const got = await permissions.getRole({ role: "connect-role" }, auth(admin));
    expect(got.role?.permissions.map((p) => p.slug)).toEqual(["c.new"]);
    const err = await connectError(permissions.setRolePermissions({ roleId: "nobody", permissions: [] }, auth(admin)));
    expect(err.code).toBe(Code.NotFound);
    expect(codeOf(err)).toBe("err:svc:data:role_not_found");
  });

  it("no credentials -> Unauthenticated whose ErrorDetail code is err:svc:authentication:missing", async () => {
    const err = await connectError(apis.createApi({ name: "no-auth" }));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(codeOf(err)).toBe("err:svc:authentication:missing");
    expect(err.rawMessage).toBe("Credentials were not provided");
    const detail = err.findDetails(ErrorDetailSchema)[0];
    expect(detail?.type).toBe(`${h.docsBase}/api-reference/errors-v2/svc/authentication/missing`);
    expect(detail?.requestId).toMatch(/\S/);
  });

  it("a malformed header -> Unauthenticated malformed; an unknown root key -> Unauthenticated key_not_found", async () => {
    const malformed = await connectError(apis.getApi({ apiId: "api_x00" }, { headers: { authorization: `bearer ${admin}` } }));
    expect(malformed.code).toBe(Code.Unauthenticated);
    expect(codeOf(malformed)).toBe("err:svc:authentication:malformed");
    const unknown = await connectError(apis.getApi({ apiId: "api_x00" }, auth(generateRootKey())));
    expect(unknown.code).toBe(Code.Unauthenticated);
    expect(codeOf(unknown)).toBe("err:svc:authentication:key_not_found");
  });

  it("lacking permission -> PermissionDenied insufficient_permissions", async () => {
    const readOnly = await h.rootKey(["apis.*.read_api"]);
    const err = await connectError(apis.createApi({ name: "denied" }, auth(readOnly)));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(codeOf(err)).toBe("err:svc:authorization:insufficient_permissions");
  });

  it("an unknown API -> NotFound api_not_found", async () => {
    const err = await connectError(apis.getApi({ apiId: "api_doesnotexist0000" }, auth(admin)));
    expect(err.code).toBe(Code.NotFound);
    expect(codeOf(err)).toBe("err:svc:data:api_not_found");
  });

  it("invalid input -> InvalidArgument invalid_input naming the field", async () => {
    const err = await connectError(apis.createApi({ name: "ab" }, auth(admin)));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(codeOf(err)).toBe("err:svc:application:invalid_input");
    expect(err.findDetails(ErrorDetailSchema)[0]?.errors.some((e) => e.location.includes("name"))).toBe(true);
  });

  // keys.verifyKey refuses these before anything waits (its outcome is then no promise, services/types.ts Answer).
  it("VerifyKey's refusals made before any wait: PermissionDenied without a verify grant, InvalidArgument for a tag holding the key", async () => {
    const { apiId } = await apis.createApi({ name: "connect-verify-refusals" }, auth(admin));
    const { key } = await keys.createKey({ apiId }, auth(admin));
    expect(await keys.verifyKey({ key }, auth(admin))).toMatchObject({ valid: true, code: "VALID" });
    const denied = await connectError(keys.verifyKey({ key }, auth(await h.rootKey(["apis.*.read_api"]))));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(codeOf(denied)).toBe("err:svc:authorization:insufficient_permissions");
    const invalid = await connectError(keys.verifyKey({ key, tags: [`k=${key}`] }, auth(admin)));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(invalid.findDetails(ErrorDetailSchema)[0]?.errors.map((e) => e.location)).toContain("body.tags[0]");
    expect(await keys.verifyKey({ key }, auth(admin))).toMatchObject({ valid: true, code: "VALID" });
  });

  it("the JSON API keeps working on the same listening server", async () => {
    const { port } = h.app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v2/apis.createApi`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${admin}` },
      body: JSON.stringify({ name: "json-too" }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { apiId: string }; meta: { requestId: string } };
    expect(body.data.apiId).toMatch(/^api_/);
    expect(res.headers.get("x-request-id")).toBe(body.meta.requestId);
  });
});
