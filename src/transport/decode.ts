// Request messages as the RPC doors (Connect, gRPC-Web, gRPC) decode them, with
// the JSON door's rule on unknown fields: a field this server does not know is
// refused, never dropped. A misspelt `expire` in JSON, or a restriction added by
// a newer client's protos in binary, silently ignored would create a key without
// the restriction its caller meant. Undecodable bytes are the caller's mistake
// (invalid_input naming `body`), never an internal error.
import { isUtf8 } from "node:buffer";
import type { UnknownField } from "@bufbuild/protobuf";
import { type DescField, type DescMessage, fromBinary, fromJson, type MessageShape } from "@bufbuild/protobuf";
import sjson from "secure-json-parse";
import { AppError, type FieldError, invalidInput } from "../core/errors.js";

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `a.b` for a plain key, `a["x.y"]` for any other, so a location always names one field. */
export const joinPath = (path: string, key: string): string => {
  const step = IDENTIFIER.test(key) ? key : `[${JSON.stringify(key)}]`;
  return path === "" || step.startsWith("[") ? `${path}${step}` : `${path}.${step}`;
};

/** The location of a field path in an error (`body.credits.remaining`). */
export const locationOf = (name: string): string => (name === "" ? "body" : name.startsWith("[") ? `body${name}` : `body.${name}`);

/** The one wording of an unknown JSON field, on every door. */
export const unknownFieldError = (name: string, known: string): FieldError => ({
  location: locationOf(name),
  message: `${name} is not a known field of this request.`,
  fix: `Remove ${name}; the fields are: ${known}.`,
});

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Well-known types have their own JSON forms (a Struct is any object); protobuf checks those itself. */
const isWellKnown = (desc: DescMessage): boolean => desc.typeName.startsWith("google.protobuf.");

const PROTO_ERRORS = { protoAction: "error", constructorAction: "error" } as const;

/**
 * A JSON body as text: UTF-8 only (RFC 8259; other bytes are refused, never
 * stored as replacement characters), not empty, and parsed without prototype
 * keys (`__proto__`, `constructor.prototype`).
 */
export function parseJson(body: Buffer): unknown {
  if (!isUtf8(body)) throw invalidInput([{ location: "body", message: "The body is not valid UTF-8.", fix: "Encode the JSON body as UTF-8." }]);
  const raw = body.toString("utf8");
  if (raw.trim() === "") {
    throw invalidInput([{ location: "body", message: "The request body is empty; send a JSON object.", fix: "Send {} when there are no fields." }]);
  }
  try {
    // secure-json-parse tests the text with two regular expressions for the names
    // (escaped or not) after parsing it, ~1,300 instructions a request (callgrind,
    // ratelimit.limit): a text without a backslash, either name or a byte order
    // mark (which it strips) gives the same as JSON.parse alone.
    return raw.charCodeAt(0) === 0xfeff || raw.includes("\\") || raw.includes("__proto__") || raw.includes("constructor")
      ? sjson.parse(raw, undefined, PROTO_ERRORS)
      : JSON.parse(raw);
  } catch (err) {
    throw invalidInput([
      { location: "body", message: `The body is not valid JSON: ${(err as Error).message}`, fix: "Send a JSON object with the request's fields." },
    ]);
  }
}

interface JsonNames {
  /** Both spellings protobuf's JSON accepts (`apiId` and `api_id`), to the field. */
  fields: Map<string, DescField>;
  known: string;
}
const jsonNames = new WeakMap<DescMessage, JsonNames>();

function namesOf(desc: DescMessage): JsonNames {
  let n = jsonNames.get(desc);
  if (n === undefined) {
    const fields = new Map<string, DescField>();
    for (const f of desc.fields) {
      fields.set(f.jsonName, f);
      fields.set(f.name, f);
    }
    n = { fields, known: desc.fields.map((f) => f.jsonName).join(", ") };
    jsonNames.set(desc, n);
  }
  return n;
}

/** Every key of a protobuf-JSON value that its message does not have, at any depth. */
export function unknownJsonFields(desc: DescMessage, json: unknown, path = "", errors: FieldError[] = []): FieldError[] {
  if (!isObject(json) || isWellKnown(desc)) return errors;
  const { fields, known } = namesOf(desc);
  for (const key in json) {
    const name = joinPath(path, key);
    const field = fields.get(key);
    if (field === undefined) {
      errors.push(unknownFieldError(name, known));
      continue;
    }
    const value = json[key];
    if (field.fieldKind === "message") unknownJsonFields(field.message, value, name, errors);
    else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      value.forEach((item, i) => {
        unknownJsonFields(field.message, item, `${name}[${i}]`, errors);
      });
    } else if (field.fieldKind === "map" && field.mapKind === "message" && isObject(value)) {
      for (const k in value) unknownJsonFields(field.message, value[k], joinPath(name, k), errors);
    }
  }
  return errors;
}

/** A protobuf-JSON request body (Connect and gRPC-Web with JSON), checked as above. */
export function decodeJson<D extends DescMessage>(desc: D, body: Buffer): MessageShape<D> {
  const json = parseJson(body);
  if (!isObject(json)) throw invalidInput([{ location: "body", message: "The body must be a JSON object." }]);
  const unknown = unknownJsonFields(desc, json);
  if (unknown.length > 0) throw invalidInput(unknown);
  try {
    return fromJson(desc, json as Parameters<typeof fromJson>[1], { ignoreUnknownFields: false });
  } catch (err) {
    const field = (err as { cause?: { field?: () => DescField | { name: string; parent: DescMessage } } }).cause?.field?.();
    // Only a top-level field has a location we can name; a nested one is named in the message.
    const location = field !== undefined && "jsonName" in field && field.parent === desc ? `body.${field.jsonName}` : "body";
    throw invalidInput([{ location, message: `The body is not a valid ${desc.typeName}: ${(err as Error).message}.` }]);
  }
}

interface MessageFields {
  /** The fields whose values are messages of our own (well-known types carry no unknown fields of interest). */
  nested: DescField[];
}
const nestedFields = new WeakMap<DescMessage, MessageFields>();

function nestedOf(desc: DescMessage): MessageFields {
  let n = nestedFields.get(desc);
  if (n === undefined) {
    n = {
      nested: desc.fields.filter(
        (f) =>
          (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") || (f.fieldKind === "map" && f.mapKind === "message")) &&
          !isWellKnown(f.message as DescMessage),
      ),
    };
    nestedFields.set(desc, n);
  }
  return n;
}

type Shape = Record<string, unknown> & { $unknown?: UnknownField[] };

/** The value a field holds in a message shape (a oneof member lives under its oneof). */
function fieldValue(msg: Shape, f: DescField): unknown {
  if (f.oneof === undefined) return msg[f.localName];
  const o = msg[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return o?.case === f.localName ? o.value : undefined;
}

const WIRE_TYPES = ["varint", "64-bit", "length-delimited", "start group", "end group", "32-bit"];

/** Every field number a decoded binary message carries that its descriptor does not have, at any depth. */
export function unknownBinaryFields(desc: DescMessage, msg: Shape, path = "", errors: FieldError[] = []): FieldError[] {
  for (const u of msg.$unknown ?? []) {
    errors.push({
      location: locationOf(path),
      message: `${path === "" ? "The message" : path} carries field number ${u.no} (${WIRE_TYPES[u.wireType] ?? "unknown wire type"}), which ${desc.typeName} does not have.`,
      fix: "Generate the client from this server's proto files, or leave the field out.",
    });
  }
  for (const f of nestedOf(desc).nested) {
    const v = fieldValue(msg, f);
    if (v === undefined) continue;
    const name = joinPath(path, f.jsonName);
    const child = f.message as DescMessage;
    if (f.fieldKind === "message") unknownBinaryFields(child, v as Shape, name, errors);
    else if (f.fieldKind === "list")
      (v as Shape[]).forEach((item, i) => {
        unknownBinaryFields(child, item, `${name}[${i}]`, errors);
      });
    else for (const k in v as Record<string, Shape>) unknownBinaryFields(child, (v as Record<string, Shape>)[k] as Shape, joinPath(name, k), errors);
  }
  return errors;
}

/** A binary protobuf request, checked as above. */
export function decodeBinary<D extends DescMessage>(desc: D, bytes: Uint8Array): MessageShape<D> {
  let msg: MessageShape<D>;
  try {
    msg = fromBinary(desc, bytes);
  } catch (err) {
    throw invalidInput([{ location: "body", message: `The request is not a valid ${desc.typeName} message: ${(err as Error).message}.` }]);
  }
  const unknown = unknownBinaryFields(desc, msg as unknown as Shape);
  if (unknown.length > 0) throw invalidInput(unknown);
  return msg;
}

/** Thrown for a request framed wrongly for its protocol (a gRPC-Web envelope cut short, two messages for a unary call). */
export const badFraming = (what: string): AppError =>
  new AppError("err:user:bad_request:request_body_unreadable", `The request body is not one framed message: ${what}.`);
