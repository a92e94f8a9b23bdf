// identities.createIdentity and ratelimit.limit over real gRPC (h2c), with a
// client built only from the .proto files, as any gRPC user would build one.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Client, call, failure, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";

const MINUTE = 60_000;

function load(): { Identities: grpc.ServiceClientConstructor; Ratelimit: grpc.ServiceClientConstructor } {
  const services = loadServices("identities_service.proto", "ratelimit_service.proto");
  return { Identities: service(services, "IdentitiesService"), Ratelimit: service(services, "RatelimitService") };
}

describe("gRPC: IdentitiesService.CreateIdentity and RatelimitService.Limit", () => {
  const h = useHarness();
  let identities: Client;
  let ratelimit: Client;
  let auth: grpc.Metadata;

  beforeAll(async () => {
    const port = await h.grpcPort();
    const { Identities, Ratelimit } = load();
    identities = new Identities(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    ratelimit = new Ratelimit(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    auth = new grpc.Metadata();
    auth.set(
      "authorization",
      `Bearer ${await h.rootKey(["identity.*.create_identity", "identity.*.read_identity", "ratelimit.*.limit", "ratelimit.*.create_namespace"])}`,
    );
  });

  afterAll(() => {
    identities?.close();
    ratelimit?.close();
  });

  it("createIdentity returns an identityId that getIdentity (and the JSON API) can read", async () => {
    const res = await call<{ identityId: string }>(
      identities,
      "createIdentity",
      { externalId: "grpc_user", meta: { fields: { plan: { stringValue: "pro" } } }, ratelimits: [{ name: "requests", limit: "5", duration: String(MINUTE) }] },
      auth,
    );
    expect(res.identityId).toMatch(/^id_/);
    const got = await call<{ identity: { id: string; externalId: string; ratelimits: Array<{ name: string; limit: string; autoApply: boolean }> } }>(
      identities,
      "getIdentity",
      { identity: "grpc_user" },
      auth,
    );
    expect(got.identity).toMatchObject({ id: res.identityId, externalId: "grpc_user" });
    expect(got.identity.ratelimits).toEqual([expect.objectContaining({ name: "requests", limit: "5", autoApply: true })]);
  });

  it("a duplicate externalId fails with ALREADY_EXISTS and the error code in metadata", async () => {
    await call(identities, "createIdentity", { externalId: "grpc_dup" }, auth);
    const err = await failure(call(identities, "createIdentity", { externalId: "grpc_dup" }, auth));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:data:identity_already_exists"]);
  });

  it("invalid input fails with INVALID_ARGUMENT naming the field", async () => {
    const err = await failure(call(identities, "createIdentity", { externalId: "has space" }, auth));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain("externalId");
  });

  it("int64 values beyond 2^53, which JSON cannot carry, are refused, not a server error", async () => {
    const err = await failure(
      call(identities, "createIdentity", { externalId: "grpc_big", ratelimits: [{ name: "big", limit: "9223372036854775807", duration: "1000" }] }, auth),
    );
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const limitErr = await failure(call(ratelimit, "limit", { namespace: "grpc_ns", identifier: "x", limit: "1", duration: "1000", cost: "-5" }, auth));
    expect(limitErr.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("limit allows up to the limit and then answers success false", async () => {
    const req = { namespace: "grpc_ns", identifier: "grpc_client", limit: "2", duration: String(MINUTE) };
    const left = MINUTE - (Date.now() % MINUTE);
    if (left < 3_000) await new Promise((r) => setTimeout(r, left + 50));
    const first = await call<{ success: boolean; remaining: string; limit: string; reset: string }>(ratelimit, "limit", req, auth);
    expect(first).toMatchObject({ success: true, remaining: "1", limit: "2" });
    expect(Number(first.reset)).toBe((Math.floor(Date.now() / MINUTE) + 1) * MINUTE);
    await call(ratelimit, "limit", req, auth);
    expect(await call(ratelimit, "limit", req, auth)).toMatchObject({ success: false, remaining: "0" });
  });

  it("without the root key in `authorization` the call is UNAUTHENTICATED", async () => {
    const err = await failure(call(ratelimit, "limit", { namespace: "n", identifier: "x", limit: "1", duration: "1000" }, new grpc.Metadata()));
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:authentication:missing"]);
  });

  it("a missing grant is PERMISSION_DENIED", async () => {
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${await h.rootKey(["identity.*.read_identity"])}`);
    const err = await failure(call(identities, "createIdentity", { externalId: "nope" }, md));
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
  });
});
