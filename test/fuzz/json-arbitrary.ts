// Request bodies for one JSON operation, derived from its request message
// descriptor: a plausible body (JSON names, kinds, lists, nested messages,
// nullable wrappers, meta objects), then zero to three mutations at field paths
// (wrong JSON types, nulls, missing and unknown fields, edge numbers, awkward
// strings, strings at and past the bounds, deep and wide values, repeated keys,
// namespace aliases), or now and then a body that is not an object at all.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import fc from "fast-check";
import { limits } from "../../src/domain/limits.js";
import { type Body, Dup, deepArray, deepObject, isPlainObject, Raw, Ref } from "./body.js";
import {
  boundaryString,
  boundsFor,
  EDGE_NUMBERS,
  isNullable,
  isStruct,
  isValue,
  nearMiss,
  plausibleNumber,
  plausibleString,
  requiredish,
  WEIRD_STRINGS,
  wideItem,
} from "./values.js";

/** Operations whose JSON body is a list (the field the gateway wraps it in). */
export const ARRAY_BODIES: Record<string, string> = { "ratelimit.multiLimit": "limits" };

/** Operations that accept namespaceId / namespaceName for namespace. */
export const ALIASED = (path: string): boolean => path.startsWith("ratelimit.");

/** Fields a JSON body may carry: `set_<x>` presence flags are set by the gateway, never sent. */
export const jsonFields = (desc: DescMessage): DescField[] => desc.fields.filter((f) => !f.name.startsWith("set_"));

const INTEGER = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64, ScalarType.SINT32, ScalarType.SINT64]);

const ABSENT = Symbol("absent");

const metaArb: fc.Arbitrary<Body> = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Body>, { maxKeys: 4 });

function scalarArb(f: DescField & { scalar: ScalarType }): fc.Arbitrary<Body> {
  if (f.scalar === ScalarType.STRING) {
    return fc.oneof({ weight: 30, arbitrary: plausibleString(f) }, { weight: 1, arbitrary: boundaryString(f) }, { weight: 1, arbitrary: nearMiss(f) });
  }
  if (f.scalar === ScalarType.BOOL) return fc.boolean();
  if (INTEGER.has(f.scalar)) return fc.oneof({ weight: 12, arbitrary: plausibleNumber(f) }, { weight: 1, arbitrary: fc.constantFrom(...boundsFor(f).numbers) });
  if (f.scalar === ScalarType.BYTES) return fc.base64String({ maxLength: 12 });
  return fc.double();
}

/** A plausible JSON value for one field. */
function valueArb(f: DescField, depth: number): fc.Arbitrary<Body> {
  switch (f.fieldKind) {
    case "scalar":
      return scalarArb(f);
    case "enum":
      return fc.constantFrom(...f.enum.values.map((v) => v.name));
    case "map":
      return fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 });
    case "list": {
      const item: fc.Arbitrary<Body> =
        f.listKind === "message"
          ? messageArb(f.message, depth + 1)
          : f.listKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.name))
            : scalarArb(f as DescField & { scalar: ScalarType });
      return fc.oneof({ weight: 4, arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: fc.constant<Body[]>([]) });
    }
    case "message":
      if (isStruct(f.message)) return metaArb;
      if (isValue(f.message)) return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Body>;
      if (isNullable(f.message)) {
        const inner = f.message.fields.find((x) => x.name === "value");
        return inner === undefined
          ? fc.constant(null)
          : fc.oneof({ weight: 5, arbitrary: valueArb(inner, depth) }, { weight: 1, arbitrary: fc.constant(null) });
      }
      return messageArb(f.message, depth + 1);
  }
}

/** A plausible object of this message: required-looking fields nearly always, optional ones sometimes. */
export function messageArb(desc: DescMessage, depth = 0): fc.Arbitrary<Body> {
  if (depth > 3) return fc.constant({});
  const fields = jsonFields(desc);
  const parts = fields.map((f) => {
    const present = valueArb(f, depth);
    const absent = fc.constant<typeof ABSENT>(ABSENT);
    // fast-check shrinks a oneof towards its first arbitrary: required fields towards present, optional towards absent.
    return requiredish(f) || f.fieldKind === "list"
      ? fc.oneof({ weight: 12, arbitrary: present }, { weight: 1, arbitrary: absent })
      : fc.oneof({ weight: 2, arbitrary: absent }, { weight: 1, arbitrary: present });
  });
  return fc.tuple(...parts).map((values) => {
    const out: { [k: string]: Body } = {};
    values.forEach((v, i) => {
      if (v !== ABSENT) out[(fields[i] as DescField).jsonName] = v as Body;
    });
    return out;
  });
}

type Path = Array<string | number>;

/** A field reachable in the body, with the path to it (list items at index 0). */
interface Site {
  path: Path;
  field: DescField;
  /** The path names one item of a list field. */
  item: boolean;
}

function sites(desc: DescMessage, prefix: Path, depth: number, out: Site[]): Site[] {
  for (const f of jsonFields(desc)) {
    const path = [...prefix, f.jsonName];
    out.push({ path, field: f, item: false });
    if (depth >= 3) continue;
    if (f.fieldKind === "list") {
      out.push({ path: [...path, 0], field: f, item: true });
      if (f.listKind === "message") sites(f.message, [...path, 0], depth + 1, out);
    } else if (f.fieldKind === "message" && !isStruct(f.message) && !isValue(f.message)) {
      const inner = isNullable(f.message) ? f.message.fields.find((x) => x.name === "value") : undefined;
      if (inner?.fieldKind === "message") sites(inner.message, path, depth + 1, out);
      else if (!isNullable(f.message)) sites(f.message, path, depth + 1, out);
    }
  }
  return out;
}

export type Mutation =
  | { kind: "set"; path: Path; value: Body; why: string }
  | { kind: "delete"; path: Path }
  | { kind: "extra"; path: Path; key: string; value: Body }
  | { kind: "dup"; path: Path; value: Body; first: boolean }
  | { kind: "alias"; to: "namespaceId" | "namespaceName" | "both" };

const WRONG_TYPES: Body[] = ["str", "", 7, 0, 1.5, true, false, [], {}, ["a"], [1, "b"], { a: 1 }, [null]];

const UNKNOWN_KEYS = [
  "unknown",
  "apiID",
  "api_id",
  "set_ratelimits",
  "setRatelimits",
  "",
  " ",
  "toString",
  "constructor",
  "hasOwnProperty",
  "length",
  "0",
  "a.b",
  "😀",
];

/** A wide value for a field: lists at and past their item bounds, objects past meta's property bound. */
function wideArb(s: Site): fc.Arbitrary<Body> {
  const f = s.field;
  const listBound = boundsFor(f).numbers.filter((n) => n >= 10 && n <= 5000);
  if (f.fieldKind === "list" && !s.item) {
    const item = (i: number): unknown =>
      f.listKind === "message" ? sampleObject(f.message, i) : f.listKind === "scalar" && INTEGER.has(f.scalar) ? 1 : wideItem(i);
    return fc.constantFrom(...listBound, 5000).map((n) => new Raw(JSON.stringify(Array.from({ length: n }, (_, i) => item(i)))));
  }
  if (f.fieldKind === "message" && isStruct(f.message)) {
    return fc
      .constantFrom(limits.metaProperties, limits.metaProperties + 1, 5000, -1)
      .map((n) =>
        n === -1
          ? new Raw(JSON.stringify({ big: "x".repeat(limits.metaBytes) }))
          : new Raw(JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))),
      );
  }
  return fc.constantFrom(5000, 100_000).map((n) => (n === 5000 ? new Raw(JSON.stringify(Array.from({ length: n }, (_, i) => i))) : "x".repeat(n)));
}

/** A minimal valid-looking object of a message (an item of a wide list). */
function sampleObject(desc: DescMessage, i: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of jsonFields(desc)) {
    if (!requiredish(f) || f.fieldKind !== "scalar") continue;
    out[f.jsonName] = f.scalar === ScalarType.STRING ? wideItem(i) : f.scalar === ScalarType.BOOL ? true : 1000;
  }
  return out;
}

function siteMutations(s: Site): fc.Arbitrary<Mutation> {
  const set = (why: string, value: fc.Arbitrary<Body>) => value.map((v): Mutation => ({ kind: "set", path: s.path, value: v, why }));
  const strings = fc.oneof(fc.constantFrom(...WEIRD_STRINGS), boundaryString(s.field), nearMiss(s.field), fc.string({ unit: "binary", maxLength: 12 }));
  const parent = s.path.slice(0, -1);
  return fc.oneof(
    set("wrong type", fc.constantFrom(...WRONG_TYPES)),
    set("null", fc.constant(null)),
    fc.constant<Mutation>({ kind: "delete", path: s.path }),
    set("number", fc.constantFrom(...EDGE_NUMBERS, ...boundsFor(s.field).numbers)),
    set("string", strings),
    set(
      "deep",
      fc.tuple(fc.constantFrom(32, 33, 1000, 100_000), fc.boolean()).map(([d, arr]) => (arr ? deepArray(d) : deepObject(d))),
    ),
    set("wide", wideArb(s)),
    fc
      .tuple(fc.oneof(fc.constantFrom(...UNKNOWN_KEYS), fc.string({ maxLength: 6 })), fc.constantFrom<Body>(1, "x", null, {}))
      .map(([key, value]): Mutation => ({ kind: "extra", path: parent, key, value })),
    fc
      .tuple(fc.oneof(valueArb(s.field, 3), fc.constantFrom(...WRONG_TYPES)), fc.boolean())
      .map(([value, first]): Mutation => ({ kind: "dup", path: s.path, value, first })),
  );
}

/** Whole bodies that are not an object, not JSON, or enormous. */
const NOT_OBJECTS: Body[] = [
  new Raw(""),
  new Raw(" "),
  new Raw("null"),
  new Raw("[]"),
  new Raw("[{}]"),
  new Raw('"x"'),
  new Raw("1"),
  new Raw("true"),
  new Raw("{"),
  new Raw('{"a":}'),
  new Raw("{}garbage"),
  new Raw("\ufeff{}"),
  new Raw("{'a':1}"),
  new Raw('{"a":1,}'),
  new Raw("NaN"),
  new Raw("\u0000"),
  new Raw('{"__proto__":{"x":1}}'),
  new Raw('{"constructor":{"prototype":{"x":1}}}'),
  deepArray(100_000),
  deepObject(100_000),
  new Raw(JSON.stringify(Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, i])))),
];

export interface JsonCase {
  base: Body;
  mutations: Mutation[];
  /** Replaces the whole body. */
  whole: Body | undefined;
}

/** Every case of one operation. */
export function jsonCaseArb(path: string, input: DescMessage): fc.Arbitrary<JsonCase> {
  const listField = ARRAY_BODIES[path];
  const itemDesc = listField === undefined ? undefined : input.fields.find((f) => f.jsonName === listField);
  const root = itemDesc?.fieldKind === "list" && itemDesc.listKind === "message" ? itemDesc.message : input;
  const base: fc.Arbitrary<Body> = root === input ? messageArb(input) : fc.array(messageArb(root), { minLength: 1, maxLength: 3 });
  const all = root === input ? sites(input, [], 0, []) : sites(root, [0], 1, []);
  const muts: fc.Arbitrary<Mutation>[] = all.map(siteMutations);
  if (ALIASED(path) && root.fields.some((f) => f.jsonName === "namespace")) {
    muts.push(fc.constantFrom<Mutation>({ kind: "alias", to: "namespaceId" }, { kind: "alias", to: "namespaceName" }, { kind: "alias", to: "both" }));
  }
  // A message with no fields (rootKeys.listRootKeys) has no site to mutate: unknown fields at its root, then.
  if (muts.length === 0) {
    muts.push(
      fc
        .tuple(fc.oneof(fc.constantFrom(...UNKNOWN_KEYS), fc.string({ maxLength: 6 })), fc.constantFrom<Body>(1, "x", null, {}))
        .map(([key, value]): Mutation => ({ kind: "extra", path: root === input ? [] : [0], key, value })),
    );
  }
  const mutation = fc.oneof(...muts);
  return fc.record({
    base,
    mutations: fc.oneof({ weight: 10, arbitrary: fc.constant<Mutation[]>([]) }, { weight: 10, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) }),
    whole: fc.oneof(
      { weight: 19, arbitrary: fc.constant<Body | undefined>(undefined) },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constantFrom(...NOT_OBJECTS),
          base.map((b) => (listField === undefined ? [b] : { [listField]: b })),
        ),
      },
    ),
  });
}

const clone = (v: Body): Body =>
  Array.isArray(v) ? v.map(clone) : isPlainObject(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clone(x)])) : v;

/** The container at `path`, created (or replaced when it is not a container) on the way. */
function containerAt(root: Body, path: Path): { [k: string]: Body } | Body[] | undefined {
  let cur: Body = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i] as string | number;
    const next = path[i + 1];
    const holder = cur as Record<string | number, Body>;
    if (!isPlainObject(cur) && !Array.isArray(cur)) return undefined;
    let child = holder[key];
    if (child === undefined || (!isPlainObject(child) && !Array.isArray(child))) {
      child = typeof next === "number" ? [] : {};
      holder[key] = child;
    }
    cur = child;
  }
  return isPlainObject(cur) || Array.isArray(cur) ? cur : undefined;
}

function applyTo(body: Body, m: Mutation): Body {
  if (m.kind === "alias") {
    const rename = (o: Body): Body => {
      if (!isPlainObject(o)) return o;
      const { namespace, ...rest } = o;
      const value = namespace ?? new Ref("namespaceName");
      if (m.to === "both") return { ...rest, namespaceId: new Ref("namespaceId"), namespaceName: value };
      return { ...rest, [m.to]: m.to === "namespaceId" ? new Ref("namespaceId") : value };
    };
    return Array.isArray(body) ? body.map(rename) : rename(body);
  }
  const parentPath = m.kind === "extra" ? m.path : m.path.slice(0, -1);
  const key = m.kind === "extra" ? m.key : (m.path[m.path.length - 1] as string | number);
  const parent = parentPath.length === 0 ? body : containerAt(body, parentPath);
  if (parent === undefined || !(isPlainObject(parent) || Array.isArray(parent))) return body;
  // Lists only take their items: no "length" or other named properties.
  if (Array.isArray(parent) && typeof key !== "number") return body;
  const holder = parent as Record<string | number, Body>;
  if (m.kind === "delete") {
    if (Array.isArray(parent) && typeof key === "number") parent.splice(key, 1);
    else delete holder[key];
  } else if (m.kind === "set" || m.kind === "extra") {
    // A copy: mutation values may be shared constants, and later mutations write into containers.
    holder[key] = clone(m.value);
  }
  return body;
}

/** Repeated keys are written last: a Dup is a leaf the other mutations cannot walk into. */
function applyDup(body: Body, m: Extract<Mutation, { kind: "dup" }>): Body {
  const key = m.path[m.path.length - 1];
  const parentPath = m.path.slice(0, -1);
  const parent = parentPath.length === 0 ? body : containerAt(body, parentPath);
  if (!isPlainObject(parent) || typeof key !== "string") return body;
  const entries = Object.entries(parent).map(([k, v]) => [k, v] as const);
  const original = parent[key];
  const dup = new Dup(
    original === undefined
      ? [[key, m.value], ...entries, [key, m.value]]
      : m.first
        ? [[key, m.value], ...entries.filter(([k]) => k !== key), [key, original]]
        : [...entries, [key, m.value]],
  );
  if (parentPath.length === 0) return dup;
  const grand = parentPath.length === 1 ? body : containerAt(body, parentPath.slice(0, -1));
  (grand as Record<string | number, Body>)[parentPath[parentPath.length - 1] as string | number] = dup;
  return body;
}

/** The body a case sends. */
export function buildBody(c: JsonCase): Body {
  if (c.whole !== undefined) return c.whole;
  let body = clone(c.base);
  for (const m of c.mutations) if (m.kind !== "dup") body = applyTo(body, m);
  for (const m of c.mutations) if (m.kind === "dup") body = applyDup(body, m);
  return body;
}

/** What the case did, for failure messages. */
export const describeCase = (c: JsonCase): string =>
  c.whole !== undefined
    ? "whole body replaced"
    : c.mutations.length === 0
      ? "plausible body"
      : c.mutations
          .map((m) =>
            m.kind === "alias"
              ? `alias ${m.to}`
              : `${m.kind === "set" ? m.why : m.kind} at ${m.path.join(".") || "body"}${m.kind === "extra" ? `.${m.key}` : ""}`,
          )
          .join("; ");
