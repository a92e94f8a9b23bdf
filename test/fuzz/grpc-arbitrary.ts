// Request messages for one gRPC method, derived from its request descriptor:
// plausible values (the seeded resources, valid names) mixed with wrong values
// that protobuf still carries (int32 and int64 edges, out-of-range enums,
// awkward and over-long strings, huge repeated fields, deep and wide Structs,
// presence flags that contradict the fields), then optionally re-encoded at the
// wire level (unknown fields, fields repeated by concatenation). Malformed wire
// bytes (truncation, wrong wire types, invalid UTF-8, bad lengths, nesting past
// the decoder's limit, garbage) come from `malformedArb`.
import { create, type DescField, type DescMessage, ScalarType, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import { limits } from "../../src/domain/limits.js";
import { Ref } from "./body.js";
import {
  boundaryString,
  boundsFor,
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
import type { World } from "./world.js";

/** A message init shape whose leaves may still be Refs to seeded resources. */
// biome-ignore lint/suspicious/noExplicitAny: init shapes of any message
export type Init = any;

const INT32 = new Set([ScalarType.INT32, ScalarType.SINT32, ScalarType.SFIXED32]);
const INT64 = new Set([ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64]);
const UINT = new Set([ScalarType.UINT32, ScalarType.FIXED32, ScalarType.UINT64, ScalarType.FIXED64]);

const I32_EDGES = [0, -1, 1, 2 ** 31 - 1, -(2 ** 31)];
const I64_EDGES = [0n, -1n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 31n, 2n ** 32n];

function scalarArb(f: DescField & { scalar: ScalarType }): fc.Arbitrary<Init> {
  const t = f.scalar;
  if (t === ScalarType.STRING) {
    return fc.oneof(
      { weight: 30, arbitrary: plausibleString(f) },
      { weight: 1, arbitrary: boundaryString(f) },
      { weight: 1, arbitrary: nearMiss(f) },
      { weight: 1, arbitrary: fc.constantFrom(...WEIRD_STRINGS) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
    );
  }
  if (t === ScalarType.BOOL) return fc.boolean();
  const bounds = boundsFor(f).numbers;
  if (INT32.has(t)) {
    const edges = [...I32_EDGES, ...bounds.filter((n) => n <= 2 ** 31 - 1)];
    return fc.oneof({ weight: 14, arbitrary: plausibleNumber(f) }, { weight: 1, arbitrary: fc.constantFrom(...edges) });
  }
  if (INT64.has(t)) {
    const edges = [...I64_EDGES, ...bounds.map(BigInt)];
    return fc.oneof(
      { weight: 14, arbitrary: plausibleNumber(f).map((v) => (v instanceof Ref ? v : BigInt(v))) },
      { weight: 1, arbitrary: fc.constantFrom(...edges) },
    );
  }
  if (UINT.has(t)) return fc.constantFrom(0, 1, 2 ** 32 - 1);
  if (t === ScalarType.BYTES) return fc.uint8Array({ maxLength: 16 });
  return fc.double();
}

/** Structs: small JSON, or at and past meta's bounds (properties, nesting). */
const structArb: fc.Arbitrary<Init> = fc.oneof(
  { weight: 12, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(limits.metaProperties, limits.metaProperties + 1, 3000)
      .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(31, 32, 33).map((d) => {
      let v: Init = { leaf: true };
      for (let i = 0; i < d; i++) v = { a: v };
      return v;
    }),
  },
  { weight: 1, arbitrary: fc.constant({ n: Number.NaN, i: Number.POSITIVE_INFINITY, z: -0, big: 1e308 }) },
);

function listArb(f: DescField & { fieldKind: "list" }, depth: number): fc.Arbitrary<Init> {
  const item: fc.Arbitrary<Init> =
    f.listKind === "message" ? messageArb(f.message, depth + 1) : f.listKind === "enum" ? enumArb(f.enum.values.map((v) => v.number)) : scalarArb(f as never);
  const wide = fc
    .constantFrom(...boundsFor(f).numbers.filter((n) => n >= 10 && n <= 5000), 10_000)
    .map((n) =>
      Array.from({ length: n }, (_, i) =>
        f.listKind === "message" ? create(f.message, sampleInit(f.message, i)) : f.listKind === "scalar" && f.scalar === ScalarType.STRING ? wideItem(i) : 1,
      ),
    );
  return fc.oneof(
    { weight: 16, arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }) },
    { weight: 4, arbitrary: fc.constant([]) },
    { weight: 1, arbitrary: wide },
  );
}

/** Known enum numbers, and numbers past them. */
const enumArb = (known: number[]): fc.Arbitrary<number> =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: fc.constantFrom(-1, 9999, 2 ** 31 - 1) });

function fieldArb(f: DescField, depth: number): fc.Arbitrary<Init> {
  switch (f.fieldKind) {
    case "scalar":
      return scalarArb(f);
    case "enum":
      return enumArb(f.enum.values.map((v) => v.number));
    case "list":
      return listArb(f, depth);
    case "map":
      return fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 });
    case "message":
      if (isStruct(f.message)) return structArb;
      if (isValue(f.message)) return fc.jsonValue({ maxDepth: 2 });
      return messageArb(f.message, depth + 1);
  }
}

/** A plausible init of this message: required-looking fields nearly always, the rest sometimes. */
export function messageArb(desc: DescMessage, depth = 0): fc.Arbitrary<Init> {
  if (depth > 3) return fc.constant({});
  if (isNullable(desc)) {
    const inner = desc.fields.find((f) => f.name === "value");
    // An empty wrapper means "clear"; a wrapper with a value sets it.
    return inner === undefined
      ? fc.constant({})
      : fc.oneof(
          fieldArb(inner, depth).map((value) => ({ value })),
          fc.constant({}),
        );
  }
  const parts = desc.fields.map((f) => {
    const value = fieldArb(f, depth);
    return requiredish(f) || f.fieldKind === "list"
      ? fc.oneof({ weight: 12, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) })
      : fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value });
  });
  return fc.tuple(...parts).map((values) => {
    const out: Init = {};
    values.forEach((v, i) => {
      if (v !== undefined) out[(desc.fields[i] as DescField).localName] = v;
    });
    return out;
  });
}

/** A minimal valid-looking init of a message (an item of a huge repeated field). */
function sampleInit(desc: DescMessage, i: number): Init {
  const out: Init = {};
  for (const f of desc.fields) {
    if (!requiredish(f) || f.fieldKind !== "scalar") continue;
    out[f.localName] = f.scalar === ScalarType.STRING ? wideItem(i) : INT64.has(f.scalar) ? 1000n : f.scalar === ScalarType.BOOL ? true : 1000;
  }
  return out;
}

/** The init with every Ref replaced by the seeded value (a bigint where the field is 64-bit). */
export function resolveInit(v: Init, w: World): Init {
  if (v instanceof Ref) {
    const r = v.resolve(w);
    return typeof r === "number" ? BigInt(r) : r;
  }
  if (Array.isArray(v)) return v.map((x) => resolveInit(x, w));
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolveInit(x, w)]));
  }
  return v;
}

/** Re-encodings that keep the bytes decodable. */
export type Reencode = { kind: "none" } | { kind: "unknown"; field: number; wire: "varint" | "len" | "fixed32" | "fixed64" } | { kind: "twice" };

export const reencodeArb: fc.Arbitrary<Reencode> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Reencode>({ kind: "none" }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(15, 99, 2047, 536_870_911), fc.constantFrom<"varint" | "len" | "fixed32" | "fixed64">("varint", "len", "fixed32", "fixed64"))
      .map(([field, wire]): Reencode => ({ kind: "unknown", field, wire })),
  },
  { weight: 1, arbitrary: fc.constant<Reencode>({ kind: "twice" }) },
);

export interface GrpcCase {
  init: Init;
  reencode: Reencode;
}

export const grpcCaseArb = (input: DescMessage): fc.Arbitrary<GrpcCase> => fc.record({ init: messageArb(input), reencode: reencodeArb });

/** The case's wire bytes. */
export function encode(input: DescMessage, c: GrpcCase, w: World): Buffer {
  const bytes = toBinary(input, create(input, resolveInit(c.init, w)));
  const r = c.reencode;
  if (r.kind === "twice") return Buffer.concat([bytes, bytes]);
  if (r.kind === "unknown") {
    const extra = new BinaryWriter();
    if (r.wire === "varint") extra.tag(r.field, WireType.Varint).uint64(2n ** 64n - 1n);
    else if (r.wire === "len") extra.tag(r.field, WireType.LengthDelimited).bytes(new Uint8Array(300).fill(0xff));
    else if (r.wire === "fixed32") extra.tag(r.field, WireType.Bit32).fixed32(0xffffffff);
    else extra.tag(r.field, WireType.Bit64).fixed64(2n ** 64n - 1n);
    return Buffer.concat([bytes, extra.finish()]);
  }
  return Buffer.from(bytes);
}

/** Bytes a protobuf decoder must refuse (or that decode to nonsense), for any method. */
export type Malformed =
  | { kind: "garbage"; bytes: Uint8Array }
  | { kind: "truncated"; at: number }
  | { kind: "wrong wire type"; field: number }
  | { kind: "invalid utf-8"; field: number; bytes: number[] }
  | { kind: "length past the end"; field: number }
  | { kind: "overlong varint" }
  | { kind: "end group without start" }
  | { kind: "nested past the limit"; depth: number };

export const malformedArb: fc.Arbitrary<Malformed> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes): Malformed => ({ kind: "garbage", bytes })),
  fc.nat(9).map((at): Malformed => ({ kind: "truncated", at })),
  fc.integer({ min: 1, max: 6 }).map((field): Malformed => ({ kind: "wrong wire type", field })),
  fc
    .tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom<number[]>([0xff, 0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]))
    .map(([field, bytes]): Malformed => ({ kind: "invalid utf-8", field, bytes })),
  fc.integer({ min: 1, max: 6 }).map((field): Malformed => ({ kind: "length past the end", field })),
  fc.constant<Malformed>({ kind: "overlong varint" }),
  fc.constant<Malformed>({ kind: "end group without start" }),
  fc.constantFrom(150, 2000).map((depth): Malformed => ({ kind: "nested past the limit", depth })),
);

/** Field 1 holding field 1 holding … `depth` times. */
function nested(depth: number): Uint8Array {
  let inner: Uint8Array = new Uint8Array(0);
  for (let i = 0; i < depth; i++) inner = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(inner).finish();
  return inner;
}

/** The malformed bytes for a method, aimed at its fields where the kind needs one. */
export function encodeMalformed(input: DescMessage, m: Malformed): Buffer {
  const field = (n: number): DescField | undefined => input.fields.find((f) => f.number === n);
  const w = new BinaryWriter();
  switch (m.kind) {
    case "garbage":
      return Buffer.from(m.bytes);
    case "truncated": {
      // Cut inside a length-delimited field.
      const whole = Buffer.from(new BinaryWriter().tag(1, WireType.LengthDelimited).string("truncate me").finish());
      return whole.subarray(0, Math.max(1, whole.length - 1 - m.at));
    }
    case "wrong wire type": {
      const f = field(m.field);
      // A string or message sent as a fixed32, a number sent as a length-delimited run.
      if (f !== undefined && f.fieldKind === "scalar" && f.scalar !== ScalarType.STRING)
        w.tag(m.field, WireType.LengthDelimited).bytes(new Uint8Array([1, 2, 3]));
      else w.tag(m.field, WireType.Bit32).fixed32(7);
      return Buffer.from(w.finish());
    }
    case "invalid utf-8": {
      const f = input.fields.find((x) => x.fieldKind === "scalar" && x.scalar === ScalarType.STRING) ?? field(m.field);
      w.tag(f?.number ?? m.field, WireType.LengthDelimited).bytes(new Uint8Array(m.bytes));
      return Buffer.from(w.finish());
    }
    case "length past the end":
      return Buffer.concat([
        Buffer.from(
          new BinaryWriter()
            .tag(m.field, WireType.LengthDelimited)
            .uint32(2 ** 31)
            .finish(),
        ),
        Buffer.from("abc"),
      ]);
    case "overlong varint":
      return Buffer.from([0x08, ...new Array(11).fill(0xff), 0x01]);
    case "end group without start":
      return Buffer.from(new BinaryWriter().tag(1, WireType.EndGroup).finish());
    case "nested past the limit": {
      // Field 1 of every nested level: decodes as a message only where field 1 is one; past 100 levels either way.
      const f = input.fields.find((x) => x.fieldKind === "message" || (x.fieldKind === "list" && x.listKind === "message"));
      return Buffer.from(
        new BinaryWriter()
          .tag(f?.number ?? 1, WireType.LengthDelimited)
          .bytes(nested(m.depth))
          .finish(),
      );
    }
  }
}
