// The served OpenAPI document: valid OpenAPI 3.1 by a real parser, the same in
// JSON and YAML, in step with the routes the server answers, and saying what the
// gateway really checks.
import { dereference, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { protoComments } from "../../gen/keyhold/proto_comments.js";
import { catalog } from "../../src/errors/catalog.js";
import { raisedBy } from "../../src/gateway/openapi.js";
import { routeTable } from "../../src/gateway/plugin.js";
import { services } from "../../src/server/registry.js";
import { useHarness } from "../harness.js";

// biome-ignore lint/suspicious/noExplicitAny: the document is walked by assertions
type Doc = any;

describe("OpenAPI document", () => {
  const h = useHarness();
  const served = async (): Promise<Doc> => {
    const res = await h.app.inject({ method: "GET", url: "/openapi.json" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    return JSON.parse(res.body);
  };
  const bodyOf = async (path: string): Promise<Doc> => {
    const doc = await dereference(await served());
    return doc.paths[path].post.requestBody.content["application/json"].schema;
  };

  it("is valid OpenAPI 3.1 by @readme/openapi-parser, without a root key", async () => {
    const doc = await served();
    expect(doc.openapi).toBe("3.1.0");
    const result = await validate(doc);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.specification).toBe("OpenAPI");
  });

  it("serves the same document as YAML", async () => {
    const res = await h.app.inject({ method: "GET", url: "/openapi.yaml" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/yaml/);
    expect(parseYaml(res.body)).toEqual(await served());
  });

  it("lists every served /v2 route, and every path in it is served", async () => {
    const doc = await served();
    const routes = routeTable(services(h.deps)).map((r) => `/v2/${r.path}`);
    expect(routes.length).toBeGreaterThan(30);
    expect(Object.keys(doc.paths).sort()).toEqual([...routes, "/v2/liveness"].sort());
    for (const p of routes) expect(Object.keys(doc.paths[p])).toEqual(["post"]);
    expect(Object.keys(doc.paths["/v2/liveness"]).sort()).toEqual(["get", "post"]);

    const rk = await h.rootKey(["*"]);
    for (const [path, ops] of Object.entries<Doc>(doc.paths)) {
      for (const method of Object.keys(ops)) {
        const res = await h.app.inject({
          method: method.toUpperCase() as "GET" | "POST",
          url: path,
          headers: { authorization: `Bearer ${rk}`, "content-type": "application/json" },
          ...(method === "post" ? { payload: "{}" } : {}),
        });
        const code = res.statusCode === 404 ? JSON.parse(res.body).error.type : "";
        expect(code, `${method} ${path}`).not.toMatch(/route_not_found$/);
      }
    }
    // And a path that is not served is not in it (the check above can fail).
    const missing = await h.post("/v2/keys.noSuchOperation", {}, rk);
    expect(missing.body.error.type).toMatch(/route_not_found$/);
    expect(doc.paths["/v2/keys.noSuchOperation"]).toBeUndefined();
  });

  it("documents the root-key bearer scheme on every operation but liveness, and Idempotency-Key on changing ones", async () => {
    const doc = await served();
    expect(doc.components.securitySchemes.rootKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ rootKey: [] }]);
    expect(doc.paths["/v2/liveness"].get.security).toEqual([]);
    expect(doc.paths["/v2/keys.createKey"].post.security).toBeUndefined();
    const idem = (p: string) => (doc.paths[p].post.parameters ?? []).map((x: Doc) => x.$ref);
    expect(idem("/v2/keys.createKey")).toEqual(["#/components/parameters/IdempotencyKey"]);
    expect(idem("/v2/keys.verifyKey")).toEqual(["#/components/parameters/IdempotencyKey"]);
    expect(idem("/v2/keys.getKey")).toEqual([]);
    expect(idem("/v2/identities.listIdentities")).toEqual([]);
    // The documented header really is refused when malformed.
    const rk = await h.rootKey(["*"]);
    const bad = await h.post("/v2/apis.createApi", { name: "openapi" }, rk, { "idempotency-key": " x" });
    expect(bad.status).toBe(400);
  });

  it("describes createKey's body as the gateway reads it", async () => {
    const body = await bodyOf("/v2/keys.createKey");
    expect(body.additionalProperties).toBe(false);
    expect(body.required).toEqual(["apiId"]);
    expect(body.properties.apiId).toMatchObject({ type: "string", minLength: 3, maxLength: 255, pattern: "^[a-zA-Z0-9_]+$" });
    expect(body.properties.expires).toMatchObject({ type: "integer", format: "int64", minimum: 0 });
    expect(body.properties.ratelimits).toMatchObject({ type: "array", maxItems: 50 });
    const rl = body.properties.ratelimits.items;
    expect(rl.required.sort()).toEqual(["duration", "limit", "name"]);
    expect(rl.properties.duration).toMatchObject({ type: "integer", format: "int64", minimum: 1000 });
    // credits.remaining takes null (unlimited); other fields do not.
    expect(body.properties.credits.properties.remaining.type).toEqual(["integer", "null"]);
    expect(body.properties.name.type).toBe("string");

    // The gateway agrees: a missing ratelimit limit is a 400 naming it.
    const rk = await h.rootKey(["*"]);
    const api = await h.post("/v2/apis.createApi", { name: "openapi-keys" }, rk);
    const res = await h.post("/v2/keys.createKey", { apiId: api.body.data.apiId, ratelimits: [{ name: "rl", duration: 1000 }] }, rk);
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: Doc) => e.location)).toContain("body.ratelimits[0].limit");
  });

  it("describes nullable updateKey fields, multiLimit's bare array and the namespace aliases", async () => {
    const update = await bodyOf("/v2/keys.updateKey");
    expect(update.properties.name.type).toEqual(["string", "null"]);
    expect(update.properties.expires.type).toEqual(["integer", "null"]);
    expect(update.properties.setRatelimits).toBeUndefined();
    const limit = await bodyOf("/v2/ratelimit.limit");
    expect(limit.oneOf).toEqual([{ required: ["namespace"] }, { required: ["namespaceId"] }, { required: ["namespaceName"] }]);
    expect(limit.properties.namespaceName).toEqual(limit.properties.namespace);
    const multi = await bodyOf("/v2/ratelimit.multiLimit");
    expect(multi.oneOf[0].type).toBe("array");
    expect(multi.oneOf[0].items.properties.namespaceId).toBeDefined();
  });

  it("describes responses: the envelope, int64 as integer, pagination on lists, unwrapped single messages", async () => {
    const doc = await dereference(await served());
    const ok = (p: string) => doc.paths[p].post.responses["200"].content["application/json"].schema;
    expect(ok("/v2/apis.createApi").required).toEqual(["meta", "data"]);
    expect(ok("/v2/apis.createApi").properties.data.required).toEqual(["apiId"]);
    const list = ok("/v2/identities.listIdentities");
    expect(list.required).toEqual(["meta", "data", "pagination"]);
    expect(list.properties.data.type).toBe("array");
    expect(list.properties.pagination.required).toEqual(["hasMore"]);
    expect(ok("/v2/keys.listKeys").properties.data.required).toContain("keys");
    expect(ok("/v2/keys.getKey").properties.data.properties.createdAt).toMatchObject({ type: "integer", format: "int64" });
    expect(ok("/v2/keys.getKey").properties.data.properties.credits.properties.remaining.type).toEqual(["integer", "null"]);
    expect(ok("/v2/identities.getIdentity").properties.data.properties.externalId.type).toBe("string");
    expect(ok("/v2/keys.verifyKey").properties.data.required).toEqual(expect.arrayContaining(["valid", "code"]));
  });

  it("lists each operation's error statuses with their codes, all answered with the error envelope", async () => {
    const doc = await served();
    const routes = routeTable(services(h.deps));
    for (const r of routes) expect(() => raisedBy(r.method), r.path).not.toThrow();
    for (const r of routes) {
      const responses = doc.paths[`/v2/${r.path}`].post.responses;
      for (const status of ["400", "401", "403", "500", "503"]) expect(responses[status], `${r.path} ${status}`).toBeDefined();
      for (const [status, res] of Object.entries<Doc>(responses)) {
        if (status === "200") continue;
        expect(res.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" });
        for (const e of res["x-error-codes"]) {
          expect(catalog[e.code as keyof typeof catalog].status).toBe(Number(status));
          expect(res.description).toContain(e.code);
        }
      }
    }
    const del = doc.paths["/v2/apis.deleteApi"].post.responses;
    expect(del["404"]["x-error-codes"].map((e: Doc) => e.code)).toEqual(["err:svc:data:api_not_found"]);
    expect(del["412"]["x-error-codes"][0].type).toBe(`${h.docsBase}/api-reference/errors-v2/svc/application/protected_resource`);
    expect(del["409"]["x-error-codes"].map((e: Doc) => e.code)).toEqual(["err:user:conflict:idempotency_key_in_use"]);
    expect(doc.paths["/v2/apis.getApi"].post.responses["409"]).toBeUndefined();
    expect(doc.components.schemas.ErrorEnvelope.properties.error.required).toEqual(["title", "detail", "status", "type"]);

    // A real error answer has the documented shape.
    const res = await h.post("/v2/apis.getApi", { apiId: "api_missing" }, await h.rootKey(["*"]));
    expect(res.status).toBe(404);
    expect(Object.keys(res.body.error).sort()).toEqual(["detail", "status", "title", "type"]);
  });

  it("describes every operation, body and field with the protos' comments", async () => {
    const doc = await served();
    for (const r of routeTable(services(h.deps))) {
      const op = doc.paths[`/v2/${r.path}`].post;
      expect(op.description, r.path).toBe(protoComments[r.rpc]);
      expect(op.summary, r.path).toMatch(/^[A-Z]/);
      expect(op.summary.length, r.path).toBeLessThan(op.description.length);
    }
    expect(doc.paths["/v2/keys.createKey"].post.summary).toBe("Issues a key");
    // Cut at a sentence's end, not at the dot inside `data.keys`; plain text, without Markdown's backticks.
    expect(doc.paths["/v2/keys.listKeys"].post.summary).toBe("Lists an API's live keys (JSON: data.keys)");
    expect(doc.paths["/v2/liveness"].get.summary).toBeDefined();

    const schemas = doc.components.schemas as Record<string, Doc>;
    expect(schemas.CreateKeyRequest.description).toBe(protoComments["keyhold.v2.CreateKeyRequest"]);
    expect(schemas.CreateKeyRequest.properties.apiId.description).toBe(protoComments["keyhold.v2.CreateKeyRequest.api_id"]);
    // Every field of every generated schema has one: the hand-written envelope schemas are the only exceptions.
    const handWritten = new Set(["Meta", "FieldError", "ErrorEnvelope"]);
    const undescribed = Object.entries(schemas)
      .filter(([name]) => !handWritten.has(name))
      .flatMap(([name, s]) =>
        Object.entries<Doc>(s.properties ?? {})
          .filter(([, p]) => typeof p.description !== "string" || p.description === "")
          .map(([f]) => `${name}.${f}`),
      );
    expect(undescribed).toEqual([]);
  });
});
