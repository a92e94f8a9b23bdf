// One focused test per defect the bad-input fuzz suites found (issue 7), so each
// stays fixed whatever seed the fuzz runs with.
import { create, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateIdentityRequestSchema } from "../../gen/keyhold/v2/identities_service_pb.js";
import { VerifyKeyRequestSchema } from "../../gen/keyhold/v2/keys_service_pb.js";
import { limits } from "../../src/domain/limits.js";
import { api, expectError, expectInvalid, key, verify } from "../fixtures.js";
import { useHarness } from "../harness.js";

const count = async (h: ReturnType<typeof useHarness>, sql: string, params: unknown[]): Promise<number> => {
  const [rows] = await h.db.pool.query(sql, params);
  return Number((rows as Array<{ n: unknown }>)[0]?.n);
};

/** `{a: {a: … {leaf: 1}}}`: the leaf sits `depth` levels below the top. */
function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

describe("bad-input regressions", () => {
  const h = useHarness();
  let rk: string;
  let apiId: string;

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    apiId = await api(h, rk);
    expect((await h.post("/v2/permissions.createRole", { name: "existing_role" }, rk)).status).toBe(200);
  });

  it("updateKey with an unknown role writes nothing: no identity for its externalId, no permission for its slugs", async () => {
    const k = await key(h, rk, apiId);
    const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, externalId: "ghost_user", permissions: ["ghost.perm"], roles: ["no_such_role"] }, rk);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect(await count(h, "SELECT COUNT(*) AS n FROM identities WHERE external_id = ?", ["ghost_user"])).toBe(0);
    expect(await count(h, "SELECT COUNT(*) AS n FROM permissions WHERE slug = ?", ["ghost.perm"])).toBe(0);
    // The same update with a real role goes through and creates both.
    const ok = await h.post("/v2/keys.updateKey", { keyId: k.keyId, externalId: "ghost_user", permissions: ["ghost.perm"], roles: ["existing_role"] }, rk);
    expect(ok.status, ok.text).toBe(200);
    expect(await count(h, "SELECT COUNT(*) AS n FROM identities WHERE external_id = ?", ["ghost_user"])).toBe(1);
  });

  it("createKey of a recoverable key with an unknown role does not create the workspace's data key", async () => {
    const other = await h.rootKey(["*"], "fuzz_regression_vault");
    const otherApi = await api(h, other);
    const workspaceId = String(
      ((await h.db.pool.query("SELECT workspace_id FROM apis WHERE id = ?", [otherApi]))[0] as Array<{ workspace_id: string }>)[0]?.workspace_id,
    );
    const res = await h.post("/v2/keys.createKey", { apiId: otherApi, recoverable: true, roles: ["no_such_role"] }, other);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect(await count(h, "SELECT COUNT(*) AS n FROM encryption_keys WHERE workspace_id = ?", [workspaceId])).toBe(0);
    expect((await h.post("/v2/keys.createKey", { apiId: otherApi, recoverable: true }, other)).status).toBe(200);
    expect(await count(h, "SELECT COUNT(*) AS n FROM encryption_keys WHERE workspace_id = ?", [workspaceId])).toBe(1);
  });

  it("verifyKey naming a rate limit the key does not have is a 412 that does not count as a use", async () => {
    const k = await key(h, rk, apiId);
    const lastUsed = async () => {
      await h.deps.usage.flush();
      await h.deps.analytics.flush();
      await h.deps.rootKeyUsage.flush();
      return count(h, "SELECT COALESCE(MAX(last_used_at_m), 0) AS n FROM keys_last_used WHERE key_id = ?", [k.keyId]);
    };
    const res = await h.post("/v2/keys.verifyKey", { key: k.key, ratelimits: [{ name: "not_on_this_key" }] }, rk);
    expectError(h, res, 412, "err:svc:application:precondition_failed");
    expect(await lastUsed()).toBe(0);
    await verify(h, rk, k.key);
    expect(await lastUsed()).toBeGreaterThan(0);
  });

  it.each([
    ["a.b", 'body["a.b"]'],
    ["x[0]", 'body["x[0]"]'],
    ["", 'body[""]'],
  ])("an unknown field %j is located unambiguously as %s", async (name, location) => {
    const res = await h.post("/v2/apis.getApi", { apiId, [name]: 1 }, rk);
    expectInvalid(h, res, name);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual([location]);
  });

  it("an unknown nested field keeps the path of its parent", async () => {
    const res = await h.post("/v2/keys.createKey", { apiId, credits: { remaining: 1, "odd key": true } }, rk);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual(['body.credits["odd key"]']);
  });

  it("a permission slug with a trailing space is refused by createKey and updateKey (it would be the unpadded slug's twin)", async () => {
    expectInvalid(h, await h.post("/v2/keys.createKey", { apiId, permissions: ["twin "] }, rk), "permissions[0]");
    const k = await key(h, rk, apiId);
    expectInvalid(h, await h.post("/v2/keys.updateKey", { keyId: k.keyId, permissions: ["ok.slug", "twin "] }, rk), "permissions[1]");
    expect(await count(h, "SELECT COUNT(*) AS n FROM permissions WHERE slug = ?", ["twin"])).toBe(0);
    // With no padded twin stored, granting the plain slug works (it once ended in a 503 retry loop).
    const res = await h.post("/v2/keys.addPermissions", { keyId: k.keyId, permissions: ["twin"] }, rk);
    expect(res.status, res.text).toBe(200);
  });

  it("a permissions query with an astral character is a 400 quoting the whole character", async () => {
    const k = await key(h, rk, apiId);
    const res = await h.post("/v2/keys.verifyKey", { key: k.key, permissions: "a.b AND 𐀀" }, rk);
    expectError(h, res, 400, "err:user:bad_request:permissions_query_syntax_error");
    expect(res.body.error.detail).toContain("'𐀀'");
  });

  it("an identity reference or externalId filter with a trailing space names nothing (the collation would match it to its trimmed twin)", async () => {
    expect((await h.post("/v2/identities.createIdentity", { externalId: "padded" }, rk)).status).toBe(200);
    await key(h, rk, apiId, { externalId: "padded" });
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "padded " }, rk), 404, "err:svc:data:identity_not_found");
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "padded  " }, rk), 404, "err:svc:data:identity_not_found");
    expect((await h.post("/v2/identities.getIdentity", { identity: "padded" }, rk)).status).toBe(200);
    const padded = await h.post("/v2/apis.listKeys", { apiId, externalId: "padded " }, rk);
    expect(padded.status, padded.text).toBe(200);
    expect(padded.body.data).toEqual([]);
    expect((await h.post("/v2/apis.listKeys", { apiId, externalId: "padded" }, rk)).body.data).toHaveLength(1);
  });

  describe("meta nesting has one bound on every transport", () => {
    let client: grpc.Client;
    beforeAll(async () => {
      client = new grpc.Client(`127.0.0.1:${await h.grpcPort()}`, grpc.credentials.createInsecure());
    });
    afterAll(() => client?.close());

    const createIdentity = (externalId: string, meta: Record<string, unknown>) =>
      new Promise<grpc.ServiceError | null>((resolve) => {
        const md = new grpc.Metadata();
        md.set("authorization", `Bearer ${rk}`);
        const bytes = Buffer.from(toBinary(CreateIdentityRequestSchema, create(CreateIdentityRequestSchema, { externalId, meta: meta as never })));
        client.makeUnaryRequest(
          "/keyhold.v2.IdentitiesService/CreateIdentity",
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          md,
          (err) => resolve(err),
        );
      });

    it("gRPC: a permissions query with an astral character is INVALID_ARGUMENT, not a call that never ends", async () => {
      const k = await key(h, rk, apiId);
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${rk}`);
      const bytes = Buffer.from(toBinary(VerifyKeyRequestSchema, create(VerifyKeyRequestSchema, { key: k.key, permissions: "𐀀" })));
      const err = await new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest(
          "/keyhold.v2.KeysService/VerifyKey",
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          md,
          { deadline: Date.now() + 10_000 },
          (e) => resolve(e),
        ),
      );
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.metadata.get("error-code")[0]).toBe("err:user:bad_request:permissions_query_syntax_error");
    });

    it(`gRPC: meta ${limits.metaDepth} levels deep is stored, one level deeper is INVALID_ARGUMENT naming meta`, async () => {
      expect(await createIdentity("deep_ok", nested(limits.metaDepth))).toBeNull();
      const err = await createIdentity("deep_too", nested(limits.metaDepth + 1));
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.metadata.get("error-code")[0]).toBe("err:svc:application:invalid_input");
      expect(err?.details).toMatch(/meta nests deeper than 32 levels/);
    });

    it("JSON: the same two documents get the same answers", async () => {
      expect((await h.post("/v2/identities.createIdentity", { externalId: "deep_ok_json", meta: nested(limits.metaDepth) }, rk)).status).toBe(200);
      expectInvalid(h, await h.post("/v2/identities.createIdentity", { externalId: "deep_too_json", meta: nested(limits.metaDepth + 1) }, rk), "meta");
    });
  });
});
