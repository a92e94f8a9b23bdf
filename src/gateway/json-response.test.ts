// textWriterFor against the object writer: for every response message of every
// service, values of every kind (set, unset, defaults, empty and full lists,
// nested messages, Structs, strings that need escaping, 64-bit integers, null
// credits), the text must be what JSON.stringify makes of writerFor's object,
// byte for byte.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AnalyticsService } from "../../gen/keyhold/v2/analytics_service_pb.js";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { AuditLogsService } from "../../gen/keyhold/v2/audit_logs_service_pb.js";
import { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { KeyCreditsSchema } from "../../gen/keyhold/v2/resources_pb.js";
import { RootKeysService } from "../../gen/keyhold/v2/root_keys_service_pb.js";
import { numberText, sentWhole, stringText, textWriterFor, writerFor } from "./json-response.js";

const SERVICES = [AnalyticsService, ApisService, AuditLogsService, IdentitiesService, KeysService, PermissionsService, RatelimitService, RootKeysService];

/** A small seeded generator (mulberry32): the same values on every run. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  "",
  "key_1ChQh4gGu7aKpeqzefPrQR",
  'quote " and \\ backslash',
  "line\nbreak\ttab",
  "ünïcödé ✓ 🗝",
  "\u0000\u001f",
  "</script>",
  "lone \ud800 surrogate",
  "\u2028\u2029\u007f",
  "x".repeat(65),
];

function scalarValue(t: ScalarType, r: () => number): unknown {
  switch (t) {
    case ScalarType.STRING:
      return STRINGS[Math.floor(r() * STRINGS.length)];
    case ScalarType.BOOL:
      return r() < 0.5;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      // Beyond 2^53 too: the answer's number is the nearest double, as the object's writer makes it.
      return r() < 0.1 ? 2n ** 60n + 1n : r() < 0.5 ? BigInt(Math.floor(r() * 2 ** 53)) : Math.floor(r() * 1e13);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return [0, -0, -1.5, 1e21, 0.1, 5e-324, Number.NaN, Number.POSITIVE_INFINITY][Math.floor(r() * 8)];
    case ScalarType.BYTES:
      return new Uint8Array([1, 2, 3]);
    default:
      return r() < 0.2 ? 0 : Math.floor(r() * 2 ** 31) - 2 ** 30;
  }
}

function fieldValue(f: DescField, r: () => number, depth: number): unknown {
  const one = (): unknown => {
    if (f.fieldKind === "list") {
      if (f.listKind === "message") return messageValue(f.message, r, depth + 1);
      if (f.listKind === "enum") return Math.floor(r() * 3);
      return scalarValue(f.scalar, r);
    }
    if (f.fieldKind === "message") return messageValue(f.message, r, depth + 1);
    if (f.fieldKind === "enum") return Math.floor(r() * 3);
    if (f.fieldKind === "scalar") return scalarValue(f.scalar, r);
    return undefined;
  };
  if (f.fieldKind === "list") return Array.from({ length: Math.floor(r() * 3) }, one);
  if (f.fieldKind === "map") return r() < 0.5 ? {} : { a: 1, 'b"c': "d" };
  return one();
}

function messageValue(desc: DescMessage, r: () => number, depth = 0): unknown {
  if (desc.typeName === "google.protobuf.Struct") return r() < 0.3 ? {} : { plan: "pro", nested: { n: 1, list: [true, null, 'x"y'] } };
  if (desc.typeName === "google.protobuf.Value") return r() < 0.5 ? "text" : { a: [1, 2] };
  const out: Record<string, unknown> = {};
  if (depth > 4) return out;
  for (const f of desc.fields) if (r() < 0.7) out[f.localName] = fieldValue(f, r, depth);
  return out;
}

/** Every operation's response message (the messages inside them are written through them). */
function responses(): DescMessage[] {
  return SERVICES.flatMap((s) => s.methods.map((m) => m.output));
}

describe("textWriterFor writes what JSON.stringify makes of writerFor's object", () => {
  it("for every response message, 200 seeded values each, and the empty message", () => {
    const r = rng(14);
    let compared = 0;
    for (const desc of responses()) {
      expect(textWriterFor(desc)({})).toBe(JSON.stringify(writerFor(desc)({})));
      expect(textWriterFor(desc)(undefined)).toBe(JSON.stringify(writerFor(desc)(undefined)));
      for (let i = 0; i < 200; i++) {
        const v = messageValue(desc, r);
        expect(textWriterFor(desc)(v), `${desc.typeName} ${i}`).toBe(JSON.stringify(writerFor(desc)(v)));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(40 * 200);
  });

  it("credits without a balance: remaining null, last; with one, the number", () => {
    expect(textWriterFor(KeyCreditsSchema)({})).toBe('{"remaining":null}');
    expect(textWriterFor(KeyCreditsSchema)({ refill: { interval: "daily", amount: 5n } })).toBe(
      JSON.stringify(writerFor(KeyCreditsSchema)({ refill: { interval: "daily", amount: 5n } })),
    );
    expect(textWriterFor(KeyCreditsSchema)({ remaining: 7n })).toBe('{"remaining":7}');
  });

  it("verifyKey and ratelimit.limit answers go whole as data; list answers do not", () => {
    const output = (s: (typeof SERVICES)[number], name: string) => s.methods.find((m) => m.localName === name)?.output as DescMessage;
    expect(sentWhole(output(KeysService, "verifyKey"))).toBe(true);
    expect(sentWhole(output(RatelimitService, "limit"))).toBe(true);
    expect(sentWhole(output(ApisService, "listKeys"))).toBe(false);
  });
});

describe("stringText and numberText write what JSON.stringify writes", () => {
  it("every UTF-16 code unit, alone and between letters, and strings either side of the length taken at once", () => {
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      expect(stringText(ch)).toBe(JSON.stringify(ch));
      expect(stringText(`a${ch}b`)).toBe(JSON.stringify(`a${ch}b`));
    }
    for (const s of ["", "🗝", "a".repeat(64), "a".repeat(65), `${"a".repeat(64)}"`, `${"a".repeat(63)}\n`]) expect(stringText(s)).toBe(JSON.stringify(s));
    for (const v of [undefined, null, 1, true, {}]) expect(stringText(v)).toBe(JSON.stringify(v));
  });

  it("numbers, the ones JSON has no text for and what is not a number", () => {
    const numbers = [0, -0, 1, -1, 0.1, 1 / 3, 1e21, 1e-7, 123456789012345680000, 2 ** 53, -(2 ** 31), 5e-324, Number.MAX_VALUE];
    for (const n of [...numbers, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "7", undefined, null, 7n.toString()]) {
      expect(numberText(n)).toBe(JSON.stringify(n));
    }
  });
});
