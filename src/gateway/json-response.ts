// Response messages (or their init shapes) to the JSON of /v2 answers, by a writer
// compiled once per message type. The rules:
//   - every implicit-presence scalar is sent, default included (`valid: false`,
//     `hasMore: false`); optional scalars and messages only when set;
//   - 64-bit integers are JSON numbers (ProtoJSON would write strings; the SDK wants numbers);
//   - empty lists are left out, as unset fields are (absent means none), except
//     the few lists an answer always carries (ALWAYS_SENT);
//   - a credits object without a balance gets `remaining: null` (unlimited), the
//     one nullable response field;
//   - google.protobuf.Struct fields are the JSON object itself.
// It reads plain init objects and created messages alike, so no create()/toJson()
// reflection runs on the hot path.
import { type DescField, type DescMessage, type JsonValue, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";

type JsonObj = { [k: string]: JsonValue };
type Writer = (v: unknown) => JsonObj;

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function scalarDefault(t: ScalarType): JsonValue {
  if (t === ScalarType.STRING || t === ScalarType.BYTES) return "";
  if (t === ScalarType.BOOL) return false;
  return 0;
}

/** List fields sent even when empty: the SDK requires both of migrateKeys's lists. */
const ALWAYS_SENT = new Set(["keyhold.v2.MigrateKeysResponse.migrated", "keyhold.v2.MigrateKeysResponse.failed"]);

/** What `make` gives for a message, made once a message and kept in `made`. */
function once<T>(made: WeakMap<DescMessage, T>, desc: DescMessage, make: (desc: DescMessage) => T): T {
  let v = made.get(desc);
  if (v === undefined) {
    v = make(desc);
    made.set(desc, v);
  }
  return v;
}

const writers = new WeakMap<DescMessage, Writer>();

export function writerFor(desc: DescMessage): Writer {
  return once(writers, desc, compile);
}

function valueWriter(
  f: DescField,
  kind: "scalar" | "enum" | "message",
  scalar: ScalarType | undefined,
  message: DescMessage | undefined,
): (v: unknown) => JsonValue {
  if (kind === "message" && message !== undefined) {
    if (message.typeName === "google.protobuf.Struct" || message.typeName === "google.protobuf.Value") return (v) => v as JsonValue;
    return (v) => writerFor(message)(v);
  }
  if (kind === "scalar" && scalar !== undefined && INT64.has(scalar)) return (v) => Number(v as bigint | number);
  void f;
  return (v) => v as JsonValue;
}

/** The kind of a field's values as the writers take it: a list's items, or the field's own value. */
type ValueKind = ["scalar" | "enum" | "message", ScalarType | undefined, DescMessage | undefined];
function valueKind(f: DescField): ValueKind {
  if (f.fieldKind === "list") {
    return [f.listKind === "message" ? "message" : "scalar", f.listKind === "scalar" ? f.scalar : undefined, f.listKind === "message" ? f.message : undefined];
  }
  if (f.fieldKind === "map") return ["scalar", undefined, undefined];
  return [f.fieldKind, f.fieldKind === "scalar" ? f.scalar : undefined, f.fieldKind === "message" ? f.message : undefined];
}

function compile(desc: DescMessage): Writer {
  const steps = desc.fields.map((f) => {
    const key = f.localName;
    const json = f.jsonName;
    if (f.fieldKind === "list") {
      const item = valueWriter(f, ...valueKind(f));
      const always = ALWAYS_SENT.has(`${desc.typeName}.${f.name}`);
      return (src: Record<string, unknown>, out: JsonObj) => {
        const v = src[key] as unknown[] | undefined;
        if (v !== undefined && v.length > 0) out[json] = v.map(item);
        else if (always) out[json] = [];
      };
    }
    if (f.fieldKind === "map") {
      return (src: Record<string, unknown>, out: JsonObj) => {
        const v = src[key];
        if (v !== undefined && Object.keys(v as object).length > 0) out[json] = v as JsonValue;
      };
    }
    const write = valueWriter(f, ...valueKind(f));
    const implicit = f.fieldKind !== "message" && f.presence === FeatureSet_FieldPresence.IMPLICIT;
    const dflt = f.fieldKind === "scalar" ? scalarDefault(f.scalar) : 0;
    return (src: Record<string, unknown>, out: JsonObj) => {
      const v = src[key];
      if (v !== undefined) out[json] = write(v);
      else if (implicit) out[json] = dflt;
    };
  });
  const nullableRemaining = desc.typeName === "keyhold.v2.KeyCredits";
  return (v: unknown) => {
    const src = (v ?? {}) as Record<string, unknown>;
    const out: JsonObj = {};
    for (const step of steps) step(src, out);
    if (nullableRemaining && out.remaining === undefined) out.remaining = null;
    return out;
  };
}

type TextWriter = (v: unknown) => string;

const textWriters = new WeakMap<DescMessage, TextWriter>();

/**
 * The same JSON as `JSON.stringify(writerFor(desc)(v))`, written as text at once
 * for a message sent whole as `data` (a verifyKey or ratelimit.limit answer):
 * no object built to be walked again by JSON.stringify. Every value the
 * object's writer would place as it is goes through JSON.stringify here too, so
 * the text is the same byte for byte, key order included (json-response.test.ts
 * compares both over every operation's response).
 */
export function textWriterFor(desc: DescMessage): TextWriter {
  return once(textWriters, desc, compileText);
}

/** A value as JSON text, as JSON.stringify writes the value valueWriter places. */
function valueText(kind: "scalar" | "enum" | "message", scalar: ScalarType | undefined, message: DescMessage | undefined): (v: unknown) => string {
  if (kind === "message" && message !== undefined) {
    if (message.typeName === "google.protobuf.Struct" || message.typeName === "google.protobuf.Value") return (v) => JSON.stringify(v);
    // Found at the first value, not here (a message may hold itself), and then kept:
    // looked up in the WeakMap for every value, it was ~0.1 us of a verification with one limit.
    let writer: TextWriter | undefined;
    return (v) => (writer ??= textWriterFor(message))(v);
  }
  if (kind === "scalar" && scalar !== undefined && INT64.has(scalar)) return (v) => JSON.stringify(Number(v as bigint | number));
  if (kind === "scalar" && scalar === ScalarType.BOOL) return (v) => (v === true ? "true" : v === false ? "false" : JSON.stringify(v));
  return (v) => JSON.stringify(v);
}

function compileText(desc: DescMessage): TextWriter {
  // Each step appends `"name":value` (with a leading comma when something came before) or nothing.
  type Step = (src: Record<string, unknown>, out: { text: string }) => void;
  const put = (out: { text: string }, name: string, value: string) => {
    out.text = out.text.length === 1 ? `${out.text}${name}${value}` : `${out.text},${name}${value}`;
  };
  const steps: Step[] = desc.fields.map((f): Step => {
    const key = f.localName;
    const name = `${JSON.stringify(f.jsonName)}:`;
    if (f.fieldKind === "list") {
      const item = valueText(...valueKind(f));
      const always = ALWAYS_SENT.has(`${desc.typeName}.${f.name}`);
      return (src, out) => {
        const v = src[key] as unknown[] | undefined;
        if (v !== undefined && v.length > 0) put(out, name, `[${v.map(item).join(",")}]`);
        else if (always) put(out, name, "[]");
      };
    }
    if (f.fieldKind === "map") {
      return (src, out) => {
        const v = src[key];
        if (v !== undefined && Object.keys(v as object).length > 0) put(out, name, JSON.stringify(v));
      };
    }
    const write = valueText(...valueKind(f));
    const implicit = f.fieldKind !== "message" && f.presence === FeatureSet_FieldPresence.IMPLICIT;
    const dflt = JSON.stringify(f.fieldKind === "scalar" ? scalarDefault(f.scalar) : 0);
    return (src, out) => {
      const v = src[key];
      if (v !== undefined) put(out, name, write(v));
      else if (implicit) put(out, name, dflt);
    };
  });
  // A credits object without a balance: `remaining: null`, last, as the object's writer adds it.
  // (A field written whenever it is unset is never null: its default is written.)
  const remaining = desc.fields.find((f) => f.jsonName === "remaining");
  const nullableRemaining =
    desc.typeName === "keyhold.v2.KeyCredits" &&
    !(remaining !== undefined && remaining.fieldKind === "scalar" && remaining.presence === FeatureSet_FieldPresence.IMPLICIT);
  const remainingKey = remaining?.localName ?? "remaining";
  return (v: unknown) => {
    const src = (v ?? {}) as Record<string, unknown>;
    const out = { text: "{" };
    for (const step of steps) step(src, out);
    if (nullableRemaining && src[remainingKey] === undefined) put(out, '"remaining":', "null");
    return `${out.text}}`;
  };
}

/** Whether an answer of this message goes whole as `data`, and so as text through textWriterFor. */
export function sentWhole(desc: DescMessage): boolean {
  const shape = shapeOf(desc);
  return !shape.paginated && shape.unwrap === undefined;
}

export function messageToJson(desc: DescMessage, msg: unknown): JsonObj {
  return writerFor(desc)(msg);
}

interface Shape {
  /** The field whose rows go in `data` (list responses), or undefined. */
  rows: DescField | undefined;
  /** The single field (a message, or a list without pagination) to unwrap into `data`, or undefined. */
  unwrap: DescField | undefined;
  paginated: boolean;
}

const shapes = new WeakMap<DescMessage, Shape>();

function shapeOf(desc: DescMessage): Shape {
  return once(shapes, desc, (d) => {
    const paginated = d.fields.some((f) => f.name === "pagination");
    return {
      paginated,
      rows: paginated ? d.fields.find((f) => f.fieldKind === "list") : undefined,
      unwrap: !paginated && d.fields.length === 1 && (d.fields[0]?.fieldKind === "message" || d.fields[0]?.fieldKind === "list") ? d.fields[0] : undefined,
    };
  });
}

/**
 * Where the response goes in the envelope: a list response puts its rows in
 * `data` and `pagination` beside it; a response holding one message (or one list,
 * as keys.addPermissions) is unwrapped.
 * `keys.listKeys` (keyhold's own operation, not in the SDK) keeps its rows in
 * `data.keys`; apis.listKeys answers the same keys as `data` itself.
 */
export function shapeResponse(path: string, desc: DescMessage, msg: unknown): { data: JsonValue; pagination?: JsonValue } {
  const json = messageToJson(desc, msg);
  const shape = shapeOf(desc);
  if (shape.paginated) {
    const page = json.pagination ?? { hasMore: false };
    const rows = shape.rows;
    if (path === "keys.listKeys" || rows === undefined) {
      const { pagination: _p, ...rest } = json;
      if (rows !== undefined && rest[rows.jsonName] === undefined) rest[rows.jsonName] = [];
      return { data: rest, pagination: page };
    }
    return { data: json[rows.jsonName] ?? [], pagination: page };
  }
  if (shape.unwrap !== undefined) return { data: json[shape.unwrap.jsonName] ?? (shape.unwrap.fieldKind === "list" ? [] : {}) };
  return { data: json };
}
