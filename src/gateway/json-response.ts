// Response messages to the contract's JSON. ProtoJSON with every implicit field
// emitted (so `valid: false` and `hasMore: false` are sent), then: empty arrays
// dropped (the contract omits empty lists), and a credits object without a
// balance gets `remaining: null` (unlimited), the one nullable response field.
import { type DescField, type DescMessage, ScalarType, toJson } from "@bufbuild/protobuf";
import type { JsonValue } from "@bufbuild/protobuf";

type JsonObj = { [k: string]: JsonValue };

export function messageToJson(desc: DescMessage, msg: unknown): JsonObj {
  const json = toJson(desc, msg as never, { alwaysEmitImplicit: true }) as JsonObj;
  clean(desc, json);
  return json;
}

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);
const isInt64 = (f: DescField): boolean => (f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")) && INT64.has(f.scalar as ScalarType);

// ProtoJSON writes 64-bit integers as strings; the contract (and the SDK) want numbers.
function clean(desc: DescMessage, obj: JsonObj): void {
  if (desc.typeName === "keyhold.v2.KeyCredits" && !("remaining" in obj)) obj.remaining = null;
  for (const field of desc.fields) {
    const v = obj[field.jsonName];
    if (v === undefined || v === null) continue;
    if (isInt64(field)) {
      obj[field.jsonName] = Array.isArray(v) ? v.map((x) => Number(x)) : Number(v);
      continue;
    }
    if (field.fieldKind === "list") {
      if (Array.isArray(v) && v.length === 0) delete obj[field.jsonName];
      else if (field.listKind === "message" && Array.isArray(v)) for (const item of v) clean(field.message, item as JsonObj);
    } else if (field.fieldKind === "message" && field.message.typeName.startsWith("keyhold.") && v !== null && typeof v === "object") {
      clean(field.message, v as JsonObj);
    }
  }
}

/**
 * Where the response goes in the envelope: a list response puts its rows in
 * `data` and `pagination` beside it; a response holding one message is unwrapped.
 * `keys.listKeys` keeps the seed's `data.keys`.
 */
export function shapeResponse(path: string, desc: DescMessage, msg: unknown): { data: JsonValue; pagination?: JsonValue } {
  const json = messageToJson(desc, msg);
  const pagination = desc.fields.find((f) => f.name === "pagination");
  if (pagination !== undefined) {
    const rows = desc.fields.find((f) => f.fieldKind === "list");
    const page = json.pagination ?? { hasMore: false };
    if (path === "keys.listKeys" || rows === undefined) {
      const { pagination: _p, ...rest } = json;
      if (rows !== undefined && rest[rows.jsonName] === undefined) rest[rows.jsonName] = [];
      return { data: rest, pagination: page };
    }
    return { data: json[rows.jsonName] ?? [], pagination: page };
  }
  if (desc.fields.length === 1 && desc.fields[0]?.fieldKind === "message") {
    return { data: json[desc.fields[0].jsonName] ?? {} };
  }
  return { data: json };
}
