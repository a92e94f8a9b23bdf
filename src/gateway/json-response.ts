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
 * object's writer would place as it is goes through JSON.stringify here too (or
 * stringText and numberText, which write what it would), so the text is the
 * same byte for byte, key order included (json-response.test.ts
 * compares both over every operation's response).
 */
export function textWriterFor(desc: DescMessage): TextWriter {
  return once(textWriters, desc, compileText);
}

const NUMBER = new Set([ScalarType.INT32, ScalarType.UINT32, ScalarType.SINT32, ScalarType.FIXED32, ScalarType.SFIXED32, ScalarType.DOUBLE, ScalarType.FLOAT]);

/**
 * What JSON.stringify makes of a value, without calling it for a short string
 * that needs no escape (no quote, backslash, control character or surrogate):
 * JSON.stringify is a call into the runtime's C++ each time, and an answer
 * with one limit called it nine times for its scalars. Anything else, and a
 * long string (where its own loop is the faster), goes to JSON.stringify.
 */
export function stringText(x: unknown): string {
  if (typeof x !== "string" || x.length > 64) return JSON.stringify(x);
  for (let i = 0; i < x.length; i++) {
    const c = x.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c < 0xe000)) return JSON.stringify(x);
  }
  return `"${x}"`;
}

/** What JSON.stringify makes of a value, without calling it for a finite number (its text is the number's own: -0 is "0" both ways). */
export function numberText(x: unknown): string {
  return typeof x === "number" && Number.isFinite(x) ? `${x}` : JSON.stringify(x);
}

/**
 * The text writer of a message, as the source of one function made once per
 * message type: each field read by its own name (`src["keyId"]`) and each
 * scalar written in place. The writer first made here was a list of closures, one
 * a field, reading `src[key]` with the key a variable: those reads shared one
 * call site across every field of every message, and V8 looked each name up
 * anew. Its steps were about 2.1 us of a verification with one limit and 3.7 of
 * an identity-linked one in a profile (BENCH_PROFILE, one round each). The source is made only of
 * our own descriptors' names, written as JSON string literals; what a client
 * sends never reaches it. A nested message is written by its own writer, list
 * items in a loop, Structs and maps by JSON.stringify.
 */
function compileText(desc: DescMessage): TextWriter {
  // Nested messages' writers, found at the first value (a message may hold
  // itself) and kept in `w`: each field calls its own from its own call site,
  // which V8 can inline, where one closure shared by every such field called
  // whichever writer it was given (9.6% of the self time of the measurement below, in a profile).
  const messages: DescMessage[] = [];
  const lit = (text: string): string => JSON.stringify(text);
  // Whether a field is surely written before the one being compiled (one written
  // whatever its value, as `valid` first of a verification): its comma is then
  // part of its name's literal (`,"code":`), where `t += sep + name + value`
  // joined the two into a new string for every field. Until then `sep` says
  // whether one was. With the two changes beside it (each nested writer called
  // from its own site, lists joined in a loop), measured 2026-12-01: the answer,
  // its envelope and Buffer.byteLength alone, fewest ns of 9 rounds, three runs
  // of each build, 801-823 → 716-755 ns with one limit, 1,417-1,466 → 1,237-1,322
  // identity-linked; `bench:ab` verifyLimit counted ×0.996 instructions a request.
  let known = false;
  const put = (name: string, value: string): string =>
    known ? `t += ${lit(`,${name}`)} + ${value};` : `t += (sep ? ${lit(`,${name}`)} : ${lit(name)}) + ${value}; sep = true;`;
  /** The text of the value in variable `x` (a field's, or a list item's). */
  const valueSource = (kind: ValueKind[0], scalar: ScalarType | undefined, message: DescMessage | undefined, x: string): string => {
    if (kind === "scalar" && scalar !== undefined && INT64.has(scalar)) return `num(Number(${x}))`;
    if (kind === "scalar" && scalar === ScalarType.BOOL) return `(${x} === true ? "true" : ${x} === false ? "false" : JSON.stringify(${x}))`;
    if (kind === "scalar" && scalar === ScalarType.STRING) return `str(${x})`;
    if (kind === "scalar" && scalar !== undefined && NUMBER.has(scalar)) return `num(${x})`;
    if (kind === "message" && message !== undefined && message.typeName !== "google.protobuf.Struct" && message.typeName !== "google.protobuf.Value") {
      const i = messages.push(message) - 1;
      return `(w[${i}] ??= tw(m[${i}]))(${x})`;
    }
    return `JSON.stringify(${x})`;
  };
  const lines = desc.fields.map((f) => {
    const read = `x = src[${lit(f.localName)}];`;
    const name = `${JSON.stringify(f.jsonName)}:`;
    if (f.fieldKind === "list") {
      // The items joined in a loop: `x.map(item).join(",")` made an array and called into the runtime for each list.
      const item = valueSource(...valueKind(f), "x[i]");
      const always = ALWAYS_SENT.has(`${desc.typeName}.${f.name}`);
      const list = `let l = "[" + ${valueSource(...valueKind(f), "x[0]")}; for (let i = 1; i < x.length; i++) l = l + "," + ${item};`;
      const line = `${read} if (x !== undefined && x.length > 0) { ${list} ${put(name, 'l + "]"')} }${always ? ` else { ${put(name, '"[]"')} }` : ""}`;
      known ||= always;
      return line;
    }
    if (f.fieldKind === "map") return `${read} if (x !== undefined && Object.keys(x).length > 0) { ${put(name, "JSON.stringify(x)")} }`;
    const implicit = f.fieldKind !== "message" && f.presence === FeatureSet_FieldPresence.IMPLICIT;
    const dflt = JSON.stringify(f.fieldKind === "scalar" ? scalarDefault(f.scalar) : 0);
    const line = `${read} if (x !== undefined) { ${put(name, valueSource(...valueKind(f), "x"))} }${implicit ? ` else { ${put(name, lit(dflt))} }` : ""}`;
    known ||= implicit;
    return line;
  });
  // A credits object without a balance: `remaining: null`, last, as the object's writer adds it.
  // (A field written whenever it is unset is never null: its default is written.)
  const remaining = desc.fields.find((f) => f.jsonName === "remaining");
  const nullableRemaining =
    desc.typeName === "keyhold.v2.KeyCredits" &&
    !(remaining !== undefined && remaining.fieldKind === "scalar" && remaining.presence === FeatureSet_FieldPresence.IMPLICIT);
  if (nullableRemaining) lines.push(`if (src[${lit(remaining?.localName ?? "remaining")}] === undefined) { ${put('"remaining":', '"null"')} }`);
  const body = ['"use strict";', "const src = v ?? {};", 'let t = "{";', "let sep = false;", "let x;", ...lines, 'return t + "}";'].join("\n");
  const writers: Array<TextWriter | undefined> = messages.map(() => undefined);
  return new Function("m", "w", "tw", "str", "num", `return function ${desc.name}Text(v) {\n${body}\n};`)(
    messages,
    writers,
    textWriterFor,
    stringText,
    numberText,
  ) as TextWriter;
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
