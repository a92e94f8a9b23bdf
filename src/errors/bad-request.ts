// Field errors as google.rpc.BadRequest, the detail a gRPC or Connect client in
// any language reads with its own standard types (Go's errdetails, Python's
// error_details_pb2, Java's com.google.rpc). It travels beside
// keyhold.v2.ErrorDetail, whose locations stay in the JSON door's terms
// (`body.apiId`); a violation here names the field as the caller's generated
// code does, by its proto path (`api_id`).
//
// The path is read off the request message's descriptor, step by step, never
// guessed from the JSON name: a JSON name may be set by `json_name` to anything,
// and the JSON door hides the `value` of the `keyhold.v2.Nullable*` wrappers of
// updates (JSON `credits.refill.amount` is proto `credits.refill.value.amount`).
import { create, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type BadRequest, BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { FieldError } from "../core/errors.js";
import { isNullableWrapper } from "../services/field-rules.js";

/** A location's proto path, and whether every step of the location named a field. */
export interface ProtoPath {
  /** Proto field names joined by `.`, list indexes as `[0]`, map keys as `["k"]` (or `[7]`, `[true]`); "" is the message itself. */
  path: string;
  /**
   * False when the location goes on past what the message has: a field it does
   * not have (an unknown field in the body), or a key inside a JSON-valued field
   * (google.protobuf.Struct and the other well-known types, whose JSON form is
   * not their fields). The path then stops at the deepest field that exists, so
   * the violation lands on the field or message that holds the problem.
   */
  complete: boolean;
}

type Step = string | number;

const NAME = /\.([A-Za-z_$][A-Za-z0-9_$]*)/y;
const INDEX = /\[(\d+)\]/y;
const QUOTED = /\[("(?:[^"\\]|\\.)*")\]/y;

/** The steps of a location after `body` (transport/decode.ts joinPath writes them): `.name`, `[0]`, `["any key"]`. */
function stepsOf(rest: string): { steps: Step[]; whole: boolean } {
  const steps: Step[] = [];
  let at = 0;
  while (at < rest.length) {
    let m: RegExpExecArray | null = null;
    for (const re of [NAME, INDEX, QUOTED]) {
      re.lastIndex = at;
      m = re.exec(rest);
      if (m === null) continue;
      const text = m[1] as string;
      if (re === QUOTED) {
        try {
          steps.push(JSON.parse(text) as string);
        } catch {
          // Not a JSON string after all (joinPath writes only valid ones): as far as it went.
          return { steps, whole: false };
        }
      } else steps.push(re === INDEX ? Number(text) : text);
      at = re.lastIndex;
      break;
    }
    if (m === null) return { steps, whole: false };
  }
  return { steps, whole: true };
}

const fieldsByName = new WeakMap<DescMessage, Map<string, DescField>>();

/** The field a JSON key names: its JSON name, or its proto name (protobuf's JSON accepts both). */
function fieldNamed(desc: DescMessage, key: string): DescField | undefined {
  let byName = fieldsByName.get(desc);
  if (byName === undefined) {
    byName = new Map();
    for (const f of desc.fields) byName.set(f.name, f);
    // JSON names set last, so they win over proto names, as in protobuf-es's fromJson.
    for (const f of desc.fields) byName.set(f.jsonName, f);
    fieldsByName.set(desc, byName);
  }
  return byName.get(key);
}

/** A map key in a path: quoted for strings, bare for integers and booleans; undefined when the JSON key cannot be one. */
function mapKey(field: DescField & { fieldKind: "map" }, key: string): string | undefined {
  if (field.mapKey === ScalarType.STRING) return `[${JSON.stringify(key)}]`;
  if (field.mapKey === ScalarType.BOOL) return key === "true" || key === "false" ? `[${key}]` : undefined;
  return /^-?\d+$/.test(key) ? `[${key}]` : undefined;
}

const isWellKnown = (desc: DescMessage): boolean => desc.typeName.startsWith("google.protobuf.");

const wrappedValue = (wrapper: DescMessage): DescField | undefined => wrapper.fields.find((f) => f.name === "value");

/** Where a walk down a location has got to. */
interface At {
  path: string;
  /** The message whose field the next step names, if the walk is on one. */
  message: DescMessage | undefined;
  /** The list or map whose item the next step names, if the walk is on one. */
  container: DescField | undefined;
}

const enter = (at: At, f: DescField): At => ({
  path: at.path === "" ? f.name : `${at.path}.${f.name}`,
  message: f.fieldKind === "message" ? f.message : undefined,
  container: f.fieldKind === "list" || f.fieldKind === "map" ? f : undefined,
});

/** The item of a list or map a step names, or undefined when the step cannot name one. */
function enterItem(at: At, c: DescField, step: Step): At | undefined {
  if (c.fieldKind === "list") {
    if (typeof step !== "number") return undefined;
    return { path: `${at.path}[${step}]`, message: c.listKind === "message" ? c.message : undefined, container: undefined };
  }
  if (c.fieldKind !== "map") return undefined;
  // A JSON object key is text: an integer key comes as `["7"]` (joinPath quotes a key that is not a plain name), or as `[7]`.
  const key = mapKey(c, String(step));
  if (key === undefined) return undefined;
  return { path: `${at.path}${key}`, message: c.mapKind === "message" ? c.message : undefined, container: undefined };
}

/**
 * The proto path of a field error's location in a request of type `desc`:
 * `body.apiId` -> `api_id`, `body.ratelimits[0].name` -> `ratelimits[0].name`,
 * `body` -> "" (the message). Undefined for a location outside the message
 * (`header.grpc-timeout`): no field of the request holds it.
 */
export function protoFieldPath(desc: DescMessage, location: string): ProtoPath | undefined {
  if (location !== "body" && !location.startsWith("body.") && !location.startsWith("body[")) return undefined;
  const { steps, whole } = stepsOf(location.slice("body".length));
  let at: At = { path: "", message: desc, container: undefined };
  for (const step of steps) {
    if (at.container !== undefined) {
      const next = enterItem(at, at.container, step);
      if (next === undefined) return { path: at.path, complete: false };
      at = next;
      continue;
    }
    const message = at.message;
    if (message === undefined || typeof step === "number" || isWellKnown(message)) return { path: at.path, complete: false };
    let f = fieldNamed(message, step);
    if (f === undefined && isNullableWrapper(message)) {
      // JSON names the wrapped message's fields directly; proto has the wrapper's `value` between.
      const value = wrappedValue(message);
      if (value?.fieldKind === "message") {
        at = enter(at, value);
        f = fieldNamed(value.message, step);
      }
    }
    if (f === undefined) return { path: at.path, complete: false };
    at = enter(at, f);
  }
  // A location ending on a wrapper names the value it sets (an update's `name` is `name.value`).
  if (whole && at.message !== undefined && isNullableWrapper(at.message)) {
    const value = wrappedValue(at.message);
    if (value !== undefined) at = enter(at, value);
  }
  return { path: at.path, complete: whole };
}

/** The JSON path a location names (`body.apiId` -> `apiId`), as field errors' messages begin with it. */
const jsonPathOf = (location: string): string => (location.startsWith("body.") ? location.slice("body.".length) : location.slice("body".length));

/**
 * The field errors of a request of type `input` as one BadRequest, or undefined
 * when none of them is about the message (none at all, or only headers). A
 * message that begins with the field's JSON path begins with its proto path
 * instead (`apiId is required.` -> `api_id is required.`), so a violation names
 * its field as its `field` does; other messages are passed on as written. The
 * `fix` texts stay in ErrorDetail: BadRequest's description says what is wrong.
 */
export function badRequestOf(input: DescMessage, errors: readonly FieldError[]): BadRequest | undefined {
  const fieldViolations: { field: string; description: string }[] = [];
  for (const e of errors) {
    const p = protoFieldPath(input, e.location);
    if (p === undefined) continue;
    const json = jsonPathOf(e.location);
    const named = p.complete && json !== "" && e.message.startsWith(`${json} `);
    fieldViolations.push({ field: p.path, description: named ? `${p.path}${e.message.slice(json.length)}` : e.message });
  }
  return fieldViolations.length === 0 ? undefined : create(BadRequestSchema, { fieldViolations });
}
