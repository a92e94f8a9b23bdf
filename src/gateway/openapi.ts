// The OpenAPI 3.1 document of the JSON API, generated at startup from the same
// service descriptors and route table the gateway serves. Request schemas follow
// what the gateway really accepts: it probes json-check.ts for the fields that
// take null and the numbers that must be sent, and json-response.ts for the
// fields every answer carries. Length, range, pattern and item limits are the
// protos' buf.validate annotations, as services/field-rules.ts enforces them;
// meta's property limit is the domain's (the annotations have none for a Struct).

import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";
import { getOption, ScalarType } from "@bufbuild/protobuf";
import type { FastifyInstance } from "fastify";
import { stringify } from "yaml";
import { protoComments } from "../../gen/keyhold/proto_comments.js";
import { raises } from "../../gen/keyhold/v2/errors_pb.js";
import type { ErrorCode } from "../core/errors.js";
import { limits } from "../domain/limits.js";
import { catalog, docsUrl } from "../errors/catalog.js";
import { type FieldRule, fieldRule, isNullableWrapper } from "../services/field-rules.js";
import { isReadOnly, KEY_FORMAT } from "../services/idempotency.js";
import type { ServiceEntry } from "../services/types.js";
import { checkBody } from "./json-check.js";
import { messageToJson, shapeResponse } from "./json-response.js";
import { type Route, routeTable } from "./plugin.js";

type Schema = Record<string, unknown>;

// ---- field rules (from the protos' buf.validate annotations) ----

interface Rule {
  /** A string or list the operation refuses when empty (proto3 cannot tell "" from absent). */
  required: boolean;
  schema: Schema;
  items?: Schema;
}

const stringSchema = (r: FieldRule): Schema => ({
  ...(r.minLen !== undefined ? { minLength: r.minLen } : {}),
  ...(r.maxLen !== undefined ? { maxLength: r.maxLen } : {}),
  ...(r.pattern !== undefined ? { pattern: r.pattern } : {}),
  ...(r.in !== undefined ? { enum: [...r.in] } : {}),
});

/** A JSON object field (meta), set directly or through its update's Nullable wrapper. */
function isStruct(f: DescField): boolean {
  if (f.fieldKind !== "message") return false;
  const m = isNullableWrapper(f.message) ? f.message.fields.find((x) => x.name === "value") : f;
  return m?.fieldKind === "message" && m.message.typeName === "google.protobuf.Struct";
}

/** The field's annotated rule as JSON Schema keywords (services/field-rules.ts reads the annotations). */
function ruleOf(f: DescField): Rule | undefined {
  const r = fieldRule(f);
  if (r === undefined) return undefined;
  const schema: Schema = {
    ...stringSchema(r),
    ...(r.min !== undefined ? { minimum: Number(r.min) } : {}),
    ...(r.max !== undefined ? { maximum: Number(r.max) } : {}),
    ...(r.minItems !== undefined ? { minItems: r.minItems } : {}),
    ...(r.maxItems !== undefined ? { maxItems: r.maxItems } : {}),
  };
  return { required: r.required, schema, ...(r.items !== undefined ? { items: stringSchema(r.items) } : {}) };
}

// ---- errors per operation ----

/** Codes every operation may answer, listed for each in the document. */
export const commonErrors: readonly ErrorCode[] = [
  "err:svc:application:invalid_input",
  "err:user:bad_request:request_body_unreadable",
  "err:svc:authentication:missing",
  "err:svc:authentication:malformed",
  "err:svc:authentication:key_not_found",
  "err:svc:authorization:insufficient_permissions",
  "err:svc:authorization:forbidden",
  "err:svc:authorization:key_disabled",
  "err:svc:authorization:workspace_disabled",
  "err:user:bad_request:request_timeout",
  "err:user:bad_request:request_body_too_large",
  "err:svc:application:unsupported_media_type",
  "err:user:bad_request:request_headers_too_large",
  "err:svc:application:unexpected_error",
  "err:svc:application:service_unavailable",
];

/** Answers of a retry racing or reusing an Idempotency-Key (changing operations only). */
export const idempotencyErrors: readonly ErrorCode[] = ["err:user:conflict:idempotency_key_in_use", "err:user:unprocessable_entity:idempotency_key_reused"];

/** The codes an operation raises besides the common ones: its `(keyhold.v2.raises)` options in proto/. */
export function raisedBy(method: DescMethod): ErrorCode[] {
  const codes = getOption(method, raises);
  for (const code of codes)
    if (!Object.hasOwn(catalog, code)) throw new Error(`openapi: ${method.parent.typeName}.${method.name} raises ${code}, which is not in the catalog`);
  return codes as ErrorCode[];
}

/** Operations whose body takes `namespaceId` / `namespaceName` for `namespace` (gateway adapters). */
const NAMESPACE_ALIASES = new Set(["ratelimit.limit", "ratelimit.setOverride", "ratelimit.getOverride", "ratelimit.listOverrides", "ratelimit.deleteOverride"]);

// ---- schemas from descriptors ----

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);
const INT32 = new Set([ScalarType.INT32, ScalarType.UINT32, ScalarType.SINT32, ScalarType.FIXED32, ScalarType.SFIXED32]);

function scalarSchema(t: ScalarType): Schema {
  if (INT64.has(t)) return { type: "integer", format: "int64" };
  if (INT32.has(t)) return { type: "integer", format: "int32" };
  if (t === ScalarType.BOOL) return { type: "boolean" };
  if (t === ScalarType.STRING) return { type: "string" };
  if (t === ScalarType.BYTES) return { type: "string", contentEncoding: "base64" };
  return { type: "number" };
}

const shortName = (desc: DescMessage): string => desc.typeName.replace(/^keyhold\.v2\./, "").replace(/\./g, "_");

/** Adds null to a schema: to `type` when it has one, else as an alternative. */
function withNull(s: Schema): Schema {
  if (typeof s.type === "string") return { ...s, type: [s.type, "null"] };
  return { oneOf: [s, { type: "null" }] };
}

class Builder {
  readonly schemas: Record<string, Schema> = {};
  private readonly inNames = new Map<DescMessage, string>();
  private readonly outNames = new Map<DescMessage, string>();

  private claim(name: string): string {
    if (this.schemas[name] !== undefined) throw new Error(`openapi: two schemas named ${name}`);
    this.schemas[name] = {};
    return name;
  }

  // Requests: as json-check.ts reads them (unknown fields refused, null only where it is accepted).
  input(desc: DescMessage): Schema {
    let name = this.inNames.get(desc);
    if (name === undefined) {
      const base = shortName(desc);
      name = this.claim(base.endsWith("Request") ? base : `${base}Input`);
      this.inNames.set(desc, name);
      this.schemas[name] = this.inputObject(desc);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  private inputObject(desc: DescMessage): Schema {
    const { errors } = checkBody(desc, {});
    const required = new Set(errors.map((e) => e.location.replace(/^body\./, "")));
    const properties: Record<string, Schema> = {};
    for (const f of desc.fields) {
      // set_<field> flags are set by the gateway from the field's presence, never sent.
      if (f.name.startsWith("set_")) continue;
      const rule = ruleOf(f);
      if (rule?.required === true) required.add(f.jsonName);
      let s = { ...this.inputField(f, rule), ...(rule?.schema ?? {}), ...(isStruct(f) ? { maxProperties: limits.metaProperties } : {}) };
      if (acceptsNull(desc, f)) s = withNull(s);
      properties[f.jsonName] = described(s, fieldComment(desc, f));
    }
    return {
      type: "object",
      ...described({}, protoComments[desc.typeName]),
      additionalProperties: false,
      properties,
      ...(required.size > 0 ? { required: [...required] } : {}),
    };
  }

  private inputField(f: DescField, rule: Rule | undefined): Schema {
    switch (f.fieldKind) {
      case "scalar":
        return scalarSchema(f.scalar);
      case "enum":
        return { type: "string", enum: f.enum.values.map((v) => v.name) };
      case "message":
        return this.inputMessage(f.message);
      case "list": {
        const item = f.listKind === "scalar" ? scalarSchema(f.scalar) : f.listKind === "enum" ? { type: "string" } : this.inputMessage(f.message);
        return { type: "array", items: { ...item, ...(rule?.items ?? {}) } };
      }
      case "map":
        return { type: "object", additionalProperties: f.mapKind === "scalar" ? scalarSchema(f.scalar) : {} };
    }
  }

  private inputMessage(m: DescMessage): Schema {
    if (m.typeName === "google.protobuf.Struct") return { type: "object" };
    if (m.typeName === "google.protobuf.Value") return {};
    if (isNullableWrapper(m)) {
      const inner = m.fields.find((x) => x.name === "value");
      return inner === undefined ? {} : this.inputField(inner, undefined);
    }
    return this.input(m);
  }

  // Responses: as json-response.ts writes them.
  output(desc: DescMessage): Schema {
    let name = this.outNames.get(desc);
    if (name === undefined) {
      const base = shortName(desc);
      name = this.claim(base.endsWith("Request") ? `${base}Output` : base);
      this.outNames.set(desc, name);
      this.schemas[name] = this.outputObject(desc, () => true);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  outputObject(desc: DescMessage, keep: (f: DescField) => boolean, alwaysSent: string[] = []): Schema {
    // Whatever the writer puts in an empty message is always sent; null there means nullable.
    const empty = messageToJson(desc, {});
    const properties: Record<string, Schema> = {};
    for (const f of desc.fields) {
      if (!keep(f)) continue;
      const s = this.outputField(f);
      // A list the writer sends even empty (json-response.ts ALWAYS_SENT) may be empty.
      if (Array.isArray(empty[f.jsonName])) delete s.minItems;
      properties[f.jsonName] = described(empty[f.jsonName] === null ? withNull(s) : s, fieldComment(desc, f));
    }
    const required = [...Object.keys(empty).filter((k) => properties[k] !== undefined), ...alwaysSent];
    return { type: "object", ...described({}, protoComments[desc.typeName]), properties, ...(required.length > 0 ? { required } : {}) };
  }

  private outputField(f: DescField): Schema {
    switch (f.fieldKind) {
      case "scalar":
        return scalarSchema(f.scalar);
      case "enum":
        return { type: "string", enum: f.enum.values.map((v) => v.name) };
      case "message":
        return this.outputMessage(f.message);
      case "list":
        // Empty lists are left out of answers.
        return { type: "array", minItems: 1, items: this.outputItem(f) };
      case "map":
        return { type: "object", additionalProperties: f.mapKind === "scalar" ? scalarSchema(f.scalar) : {} };
    }
  }

  /** The schema of one item of a list field in an answer. */
  outputItem(f: DescField): Schema {
    if (f.fieldKind !== "list") return {};
    if (f.listKind === "scalar") return scalarSchema(f.scalar);
    if (f.listKind === "enum") return { type: "string" };
    return this.outputMessage(f.message);
  }

  private outputMessage(m: DescMessage): Schema {
    if (m.typeName === "google.protobuf.Struct") return { type: "object" };
    if (m.typeName === "google.protobuf.Value") return {};
    return this.output(m);
  }
}

/** Whether json-check.ts takes null for this field (a nullable wrapper or a null that means "unset"). */
function acceptsNull(desc: DescMessage, f: DescField): boolean {
  const { errors } = checkBody(desc, { [f.jsonName]: null });
  return !errors.some((e) => e.location === `body.${f.jsonName}` && / must not be null\./.test(e.message));
}

/** The namespace field and its two aliases, exactly one of them sent (plugin.ts namespaceAliases). */
function withNamespaceAliases(s: Schema): Schema {
  const props = s.properties as Record<string, Schema>;
  const { required: given, ...rest } = s;
  const required = (given as string[] | undefined)?.filter((r) => r !== "namespace") ?? [];
  return {
    ...rest,
    properties: { ...props, namespaceId: props.namespace, namespaceName: props.namespace },
    ...(required.length > 0 ? { required } : {}),
    oneOf: ["namespace", "namespaceId", "namespaceName"].map((k) => ({ required: [k] })),
  };
}

/** `data` (and `pagination`) of a successful answer, as shapeResponse places them. */
function dataSchema(b: Builder, route: Route): { data: Schema; pagination?: Schema } {
  const desc = route.output;
  const probe = shapeResponse(route.path, desc, {});
  const page = desc.fields.find((f) => f.name === "pagination");
  if (probe.pagination !== undefined && page?.fieldKind === "message") {
    const pagination = b.output(page.message);
    const rows = desc.fields.find((f) => f.fieldKind === "list");
    if (rows?.fieldKind !== "list") return { data: b.outputObject(desc, (f) => f !== page), pagination };
    const items = b.outputItem(rows);
    if (Array.isArray(probe.data)) return { data: { type: "array", items }, pagination };
    // keys.listKeys keeps its rows under their field name, sent even when empty.
    const data = b.outputObject(desc, (f) => f !== page, [rows.jsonName]);
    (data.properties as Record<string, Schema>)[rows.jsonName] = { type: "array", items };
    return { data, pagination };
  }
  const only = desc.fields.length === 1 ? desc.fields[0] : undefined;
  // One message or one list field is unwrapped into data (json-response.ts shapeOf).
  if (only?.fieldKind === "message") return { data: b.output(only.message) };
  if (only?.fieldKind === "list") {
    return { data: { type: "array", items: b.outputItem(only) } };
  }
  return { data: b.output(desc) };
}

const ref = (kind: "schemas" | "responses" | "parameters", name: string): Schema => ({ $ref: `#/components/${kind}/${name}` });

function errorResponses(codes: ErrorCode[], docsBase: string): Record<string, Schema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = catalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, Schema> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const title = catalog[list[0] as ErrorCode].title;
    out[String(status)] = {
      description: `${title}: ${list.map((c) => `\`${c}\``).join(", ")}`,
      "x-error-codes": list.map((code) => ({ code, type: docsUrl(code, docsBase), detail: catalog[code].detail })),
      content: { "application/json": { schema: ref("schemas", "ErrorEnvelope") } },
    };
  }
  return out;
}

function operation(b: Builder, route: Route, docsBase: string): Schema {
  const method = route.path.slice(route.path.indexOf(".") + 1);
  const changing = !isReadOnly(method);
  let body: Schema = b.input(route.input);
  if (NAMESPACE_ALIASES.has(route.path)) body = aliasBody(b, route.input);
  if (route.path === "ratelimit.multiLimit") {
    // The JSON body is the array of checks itself (each with the namespace aliases); the message form is read too.
    const item = route.input.fields.find((f) => f.name === "limits");
    const itemSchema = item?.fieldKind === "list" && item.listKind === "message" ? aliasBody(b, item.message) : {};
    body = { oneOf: [{ type: "array", items: itemSchema }, body] };
  }
  const { data, pagination } = dataSchema(b, route);
  const success: Schema = {
    type: "object",
    required: ["meta", "data", ...(pagination !== undefined ? ["pagination"] : [])],
    properties: { meta: ref("schemas", "Meta"), data, ...(pagination !== undefined ? { pagination } : {}) },
  };
  const doc = protoComments[route.rpc];
  return {
    operationId: route.path,
    ...(doc === undefined ? {} : { summary: summaryOf(doc), description: doc }),
    tags: [route.group],
    ...(changing ? { parameters: [ref("parameters", "IdempotencyKey")] } : {}),
    requestBody: { required: true, content: { "application/json": { schema: body } } },
    responses: {
      "200": {
        description: "Success.",
        ...(changing
          ? {
              headers: {
                "idempotent-replayed": {
                  description: "`true` when this is the stored answer of an earlier request with the same Idempotency-Key.",
                  schema: { type: "string", enum: ["true"] },
                },
              },
            }
          : {}),
        content: { "application/json": { schema: success } },
      },
      ...errorResponses([...commonErrors, ...(changing ? idempotencyErrors : []), ...raisedBy(route.method)], docsBase),
    },
  };
}

/**
 * A proto comment's first clause without the RPC's name, as plain text (renderers
 * show summaries unformatted): "CreateKey issues a key; …" → "Issues a key".
 */
function summaryOf(comment: string): string {
  // Up to a semicolon or a full stop that ends a sentence (not the dot of `data.keys`).
  const first = (/^(.*?)(?:;|\.(?:\s|$))/.exec(comment)?.[1] ?? comment).trim().replace(/^[A-Z]\w*\s+/, "");
  const plain = first.replaceAll("`", "");
  return plain.charAt(0).toUpperCase() + plain.slice(1);
}

/** A field's proto comment, when it has one. */
const fieldComment = (desc: DescMessage, f: DescField): string | undefined => protoComments[`${desc.typeName}.${f.name}`];

/** The schema with a description added, when there is one. */
function described(s: Schema, description: string | undefined): Schema {
  return description === undefined ? s : { ...s, description };
}

function aliasBody(b: Builder, desc: DescMessage): Schema {
  const name = `${shortName(desc)}Body`;
  if (b.schemas[name] === undefined) {
    const resolved = b.input(desc);
    const target = b.schemas[(resolved.$ref as string).split("/").pop() as string] as Schema;
    b.schemas[name] = withNamespaceAliases(target);
  }
  return ref("schemas", name);
}

function livenessOperation(id: string): Schema {
  return {
    operationId: id,
    summary: "Tells whether the process is running",
    description: "Needs no root key. 200 while the process runs; readiness (database, Redis) is GET /readyz.",
    tags: ["liveness"],
    security: [],
    responses: {
      "200": {
        description: "The process is running (degraded parts, if any, are named).",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["meta", "data"],
              properties: {
                meta: ref("schemas", "Meta"),
                data: {
                  type: "object",
                  required: ["message"],
                  properties: { message: { type: "string" }, degraded: { type: "array", items: { type: "string" } } },
                },
              },
            },
          },
        },
      },
    },
  };
}

const staticSchemas = (): Record<string, Schema> => ({
  Meta: { type: "object", required: ["requestId"], properties: { requestId: { type: "string" } } },
  FieldError: {
    type: "object",
    required: ["location", "message"],
    properties: { location: { type: "string" }, message: { type: "string" }, fix: { type: "string" } },
  },
  ErrorEnvelope: {
    type: "object",
    required: ["meta", "error"],
    properties: {
      meta: ref("schemas", "Meta"),
      error: {
        type: "object",
        required: ["title", "detail", "status", "type"],
        properties: {
          title: { type: "string" },
          detail: { type: "string" },
          status: { type: "integer" },
          type: { type: "string", format: "uri" },
          // 400s always carry it.
          errors: { type: "array", items: ref("schemas", "FieldError") },
        },
      },
    },
  },
});

export function openApiDocument(entries: ServiceEntry[], docsBase: string): Schema {
  const b = new Builder();
  Object.assign(b.schemas, staticSchemas());
  const paths: Record<string, Schema> = {
    "/v2/liveness": { get: livenessOperation("liveness"), post: livenessOperation("liveness.post") },
  };
  for (const route of routeTable(entries)) paths[`/v2/${route.path}`] = { post: operation(b, route, docsBase) };
  return {
    openapi: "3.1.0",
    info: {
      title: "keyhold",
      version: "2",
      description: "API-key management. Every operation is `POST /v2/<group>.<operation>` with a JSON body; 64-bit integers are JSON numbers.",
    },
    externalDocs: { url: docsBase },
    security: [{ rootKey: [] }],
    paths,
    components: {
      securitySchemes: { rootKey: { type: "http", scheme: "bearer", description: "A root key: `Authorization: Bearer <root key>`." } },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description: "Makes a retry of this request answer the first response again instead of running twice.",
          schema: { type: "string", minLength: 1, maxLength: 255, pattern: KEY_FORMAT.source },
        },
      },
      schemas: b.schemas,
    },
  };
}

/**
 * GET /openapi.json and /openapi.yaml, each built on its first request and kept.
 * Built at start-up they cost every start ~150 ms of CPU here (the YAML most of
 * it), every test file's server included, for a document few instances serve.
 */
export function registerOpenApi(app: FastifyInstance, entries: ServiceEntry[], docsBase: string): void {
  let doc: Schema | undefined;
  let json: string | undefined;
  let yaml: string | undefined;
  const document = (): Schema => (doc ??= openApiDocument(entries, docsBase));
  app.get("/openapi.json", async (_req, reply) => reply.header("content-type", "application/json; charset=utf-8").send((json ??= JSON.stringify(document()))));
  app.get("/openapi.yaml", async (_req, reply) =>
    reply.header("content-type", "application/yaml; charset=utf-8").send((yaml ??= stringify(document(), { aliasDuplicateObjects: false }))),
  );
}
