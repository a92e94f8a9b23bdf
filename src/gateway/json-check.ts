// Strict checks of a JSON request body against the request message's descriptor,
// and its conversion to the generated message shape in the same walk. ProtoJSON
// is lenient where keyhold is not: it accepts "16" for an integer and treats
// null as "not set". Here every field must have its JSON type, unknown
// properties are refused (a misspelt field silently dropped would change what
// the caller asked for), and null is allowed only where a field is nullable
// (docs/errors.md, "Unknown fields are refused"). The result has every field
// the generated type has (defaults filled, 64-bit integers as bigint), with the
// nullable wrappers (`keyhold.v2.Nullable*`) and the `set_<field>` presence flags set.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import type { FieldError } from "../core/errors.js";
import { limits } from "../domain/limits.js";
import { isNullableWrapper } from "../services/field-rules.js";
import { joinPath as join, locationOf, unknownFieldError } from "../transport/decode.js";

/** Fields whose JSON null means "unset" (an unlimited credit balance). */
const NULL_MEANS_UNSET = new Set(["keyhold.v2.KeyCredits.remaining", "keyhold.v2.UpdateCreditsRequest.value"]);

/** Fields whose JSON null stands for another value (updateKey `credits: null` = unlimited, refill cleared). */
const NULL_MEANS: Record<string, () => unknown> = { "keyhold.v2.UpdateKeyRequest.credits": () => ({ remaining: {} }) };

const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

const INTEGER_TYPES = new Set([
  ScalarType.INT32,
  ScalarType.INT64,
  ScalarType.UINT32,
  ScalarType.UINT64,
  ScalarType.SINT32,
  ScalarType.SINT64,
  ScalarType.FIXED32,
  ScalarType.FIXED64,
  ScalarType.SFIXED32,
  ScalarType.SFIXED64,
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

type Json = unknown;

function describeType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number") {
    if (Number.isSafeInteger(v)) return "an integer";
    // JSON.parse has already rounded it: saying "an integer" alone would read as no reason at all.
    return Number.isInteger(v) ? `an integer beyond ±${Number.MAX_SAFE_INTEGER} (not exact as a JSON number)` : "a number";
  }
  return `a ${typeof v}`;
}

function scalarName(t: ScalarType): string {
  if (INTEGER_TYPES.has(t)) return "an integer";
  if (t === ScalarType.BOOL) return "a boolean";
  if (t === ScalarType.STRING) return "a valid Unicode string";
  if (t === ScalarType.BYTES) return "a base64 string";
  return "a number";
}

/**
 * A lone UTF-16 surrogate cannot be stored or encoded as UTF-8. `isWellFormed`
 * (ES2024, Node 20+) answers a string V8 holds one byte a character (an ASCII
 * key, most text) without reading it; the regular expression it replaced ran
 * over every string of every request.
 */
const wellFormed = (s: string): boolean => s.isWellFormed();

/** How deep a JSON document inside a request (meta) may nest. */
export const MAX_JSON_DEPTH = limits.metaDepth;

/** Checks free-form JSON (meta): bounded nesting, well-formed strings, keys included. */
function checkFreeJson(v: Json, name: string, errors: FieldError[], depth = 0): boolean {
  if (depth > MAX_JSON_DEPTH) {
    errors.push({ location: locationOf(name), message: `${name} nests deeper than ${MAX_JSON_DEPTH} levels.` });
    return false;
  }
  if (typeof v === "string") {
    if (!wellFormed(v)) {
      errors.push({ location: locationOf(name), message: `${name} contains a string that is not valid Unicode (a lone surrogate).` });
      return false;
    }
    return true;
  }
  if (Array.isArray(v)) return v.every((x) => checkFreeJson(x, name, errors, depth + 1));
  if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (!checkFreeJson(k, name, errors, depth + 1) || !checkFreeJson(x, name, errors, depth + 1)) return false;
    }
  }
  return true;
}

function checkScalar(t: ScalarType, v: Json): boolean {
  switch (t) {
    case ScalarType.STRING:
      return typeof v === "string" && wellFormed(v);
    case ScalarType.BYTES:
      return typeof v === "string";
    case ScalarType.BOOL:
      return typeof v === "boolean";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return typeof v === "number" && Number.isFinite(v);
    default:
      // JSON numbers beyond 2^53 have already lost precision in JSON.parse.
      return typeof v === "number" && Number.isSafeInteger(v);
  }
}

/** Checks a request message's JSON object and returns it in the generated message's shape. */
type MessageCheck = (obj: Record<string, Json>, path: string, errors: FieldError[]) => Record<string, Json>;

const checks = new WeakMap<DescMessage, MessageCheck>();

/** A field's value when absent from the body (the generated type's default), as source text; undefined for none. */
function zeroSource(f: DescField): string | undefined {
  if (f.fieldKind === "list") return "[]";
  if (f.fieldKind === "map") return "{}";
  if (f.fieldKind === "scalar" && f.presence === FeatureSet_FieldPresence.IMPLICIT) {
    if (INT64_TYPES.has(f.scalar)) return "0n";
    if (f.scalar === ScalarType.STRING) return '""';
    if (f.scalar === ScalarType.BOOL) return "false";
    if (f.scalar === ScalarType.BYTES) return "new Uint8Array(0)";
    return "0";
  }
  return undefined;
}

/**
 * A scalar's check when its value has its JSON type, as source text reading
 * `value` (a string, bool or integer of the right kind is taken as it is,
 * 64-bit integers as bigint); anything else, null included, goes to checkField
 * for its error or its meaning. undefined for the kinds always left to checkField.
 */
function fastScalarSource(f: DescField): string | undefined {
  if (f.fieldKind !== "scalar") return undefined;
  if (f.scalar === ScalarType.STRING) return 'typeof value === "string" && value.isWellFormed() ? value : SLOW';
  if (f.scalar === ScalarType.BOOL) return 'typeof value === "boolean" ? value : SLOW';
  if (INT64_TYPES.has(f.scalar)) return 'typeof value === "number" && Number.isSafeInteger(value) ? BigInt(value) : SLOW';
  if (INTEGER_TYPES.has(f.scalar)) return 'typeof value === "number" && Number.isSafeInteger(value) ? value : SLOW';
  return undefined;
}

/**
 * A message's check, made once per message type by `new Function` from its
 * descriptor: the body's keys switched on as literals and each field's value
 * written by name, where a plan of Maps read both by a variable key on every
 * request (one call site for every field of every message). Names reach the
 * source only as JSON string literals from the descriptors; nothing a client
 * sends does. Values that are not plainly right go through checkField as before.
 */
function compileCheck(desc: DescMessage): MessageCheck {
  const lit = (text: string): string => JSON.stringify(text);
  const fields: DescField[] = [];
  const flags = new Map<string, DescField>();
  const defaults: string[] = [];
  const requiredNumbers: string[] = [];
  for (const f of desc.fields) {
    if (
      f.fieldKind === "scalar" &&
      f.presence === FeatureSet_FieldPresence.IMPLICIT &&
      f.scalar !== ScalarType.STRING &&
      f.scalar !== ScalarType.BOOL &&
      f.scalar !== ScalarType.BYTES
    ) {
      // proto3 cannot tell a missing number from 0, but every non-optional number
      // of a request is required by the contract (a rate limit's limit, a reroll's expiration, a credit cost...).
      requiredNumbers.push(f.jsonName);
    }
    if (f.name.startsWith("set_")) flags.set(f.name.slice(4), f);
    else fields.push(f);
    const z = zeroSource(f);
    if (z !== undefined) defaults.push(`${lit(f.localName)}: ${z}`);
  }
  const names = fields.map((f) => f.jsonName).join(", ");
  const cases = fields.map((f, i) => {
    const slow = `checkField(F[${i}], value, join(path, key), errors)`;
    const flag = flags.get(f.name);
    const fast = fastScalarSource(f);
    return [
      `case ${lit(f.jsonName)}: {`,
      flag === undefined ? "" : `out[${lit(flag.localName)}] = true;`,
      `const checked = ${fast === undefined ? slow : fast.replace("SLOW", slow)};`,
      `if (checked !== undefined) out[${lit(f.localName)}] = checked;`,
      "break;",
      "}",
    ].join(" ");
  });
  const required = requiredNumbers.map(
    (json) =>
      `if (obj[${lit(json)}] === undefined) { const name = join(path, ${lit(json)}); errors.push({ location: locationOf(name), message: name + " is required.", fix: "Send " + name + " as an integer." }); }`,
  );
  const body = [
    '"use strict";',
    `const out = { ${defaults.join(", ")} };`,
    "for (const key in obj) {",
    "const value = obj[key];",
    "switch (key) {",
    ...cases,
    `default: errors.push(unknownFieldError(join(path, key), ${lit(names)}));`,
    "}",
    "}",
    ...required,
    "return out;",
  ].join("\n");
  const make = new Function(
    "F",
    "checkField",
    "join",
    "locationOf",
    "unknownFieldError",
    `return function ${desc.name}Check(obj, path, errors) {\n${body}\n};`,
  );
  return make(fields, checkField, join, locationOf, unknownFieldError) as MessageCheck;
}

export function checkBody(desc: DescMessage, body: Json): { json: Record<string, Json>; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (!isObject(body)) {
    errors.push({ location: "body", message: `The body must be a JSON object, not ${describeType(body)}.` });
    return { json: {}, errors };
  }
  const json = checkMessage(desc, body, "", errors);
  return { json, errors };
}

function checkMessage(desc: DescMessage, obj: Record<string, Json>, path: string, errors: FieldError[]): Record<string, Json> {
  let check = checks.get(desc);
  if (check === undefined) {
    check = compileCheck(desc);
    checks.set(desc, check);
  }
  return check(obj, path, errors);
}

/** Returns the ProtoJSON value to keep, or undefined to leave the field unset. */
function checkField(field: DescField, value: Json, name: string, errors: FieldError[]): Json {
  if (value === null) {
    const fq = `${field.parent.typeName}.${field.name}`;
    if (NULL_MEANS_UNSET.has(fq)) return undefined;
    const replacement = NULL_MEANS[fq];
    if (replacement !== undefined) return replacement();
    if (field.fieldKind === "message" && isNullableWrapper(field.message)) return {};
    errors.push({ location: locationOf(name), message: `${name} must not be null.`, fix: `Omit ${name} or send a value.` });
    return undefined;
  }
  switch (field.fieldKind) {
    case "scalar":
      if (!checkScalar(field.scalar, value)) {
        const what = typeof value === "string" && field.scalar === ScalarType.STRING ? "a string with a lone surrogate" : describeType(value);
        errors.push({ location: locationOf(name), message: `${name} must be ${scalarName(field.scalar)}, not ${what}.` });
        return undefined;
      }
      return INT64_TYPES.has(field.scalar) ? BigInt(value as number) : value;
    case "enum":
      if (typeof value !== "string") {
        errors.push({ location: locationOf(name), message: `${name} must be a string, not ${describeType(value)}.` });
        return undefined;
      }
      return value;
    case "message":
      return checkMessageValue(field.message, value, name, errors);
    case "list": {
      if (!Array.isArray(value)) {
        errors.push({ location: locationOf(name), message: `${name} must be an array, not ${describeType(value)}.` });
        return undefined;
      }
      const items: Json[] = [];
      value.forEach((item, i) => {
        const itemName = `${name}[${i}]`;
        if (field.listKind === "scalar") {
          if (!checkScalar(field.scalar, item)) {
            errors.push({ location: locationOf(itemName), message: `${itemName} must be ${scalarName(field.scalar)}, not ${describeType(item)}.` });
          } else items.push(INT64_TYPES.has(field.scalar) ? BigInt(item as number) : item);
        } else if (field.listKind === "message") {
          items.push(checkMessageValue(field.message, item, itemName, errors));
        } else {
          if (typeof item !== "string") errors.push({ location: locationOf(itemName), message: `${itemName} must be a string.` });
          else items.push(item);
        }
      });
      return items;
    }
    case "map":
      if (!isObject(value)) {
        errors.push({ location: locationOf(name), message: `${name} must be an object, not ${describeType(value)}.` });
        return undefined;
      }
      return value;
  }
}

function checkMessageValue(desc: DescMessage, value: Json, name: string, errors: FieldError[]): Json {
  switch (desc.typeName) {
    case "google.protobuf.Struct":
      if (!isObject(value)) {
        errors.push({ location: locationOf(name), message: `${name} must be a JSON object, not ${describeType(value)}.` });
        return undefined;
      }
      return checkFreeJson(value, name, errors) ? value : undefined;
    case "google.protobuf.Value":
      return checkFreeJson(value, name, errors) ? value : undefined;
  }
  if (isNullableWrapper(desc)) {
    const inner = desc.fields.find((f) => f.name === "value");
    if (inner === undefined) return undefined;
    const checked = checkField(inner, value, name, errors);
    return checked === undefined ? undefined : { value: checked };
  }
  if (!isObject(value)) {
    errors.push({ location: locationOf(name), message: `${name} must be an object, not ${describeType(value)}.` });
    return undefined;
  }
  return checkMessage(desc, value, name, errors);
}
