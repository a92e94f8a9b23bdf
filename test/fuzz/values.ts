// Value pools shared by the JSON and gRPC generators: edge numbers, awkward
// strings, lengths and numbers at and around every bound of the protos' field
// rules (their buf.validate annotations, as src/services/field-rules.ts reads them),
// and plausible values per field name (mostly the seeded resources), so that a
// good share of cases get past validation into the operations.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { type FieldRule, fieldRule } from "../../src/services/field-rules.js";
import { Raw, Ref } from "./body.js";
import type { WorldName } from "./world.js";

export const isStruct = (m: DescMessage): boolean => m.typeName === "google.protobuf.Struct";
export const isValue = (m: DescMessage): boolean => m.typeName === "google.protobuf.Value";
export const isNullable = (m: DescMessage): boolean => m.typeName.startsWith("keyhold.v2.Nullable");

/** A field counted as required: implicit-presence scalars (ids, names, numbers, presence flags). */
export const requiredish = (f: DescField): boolean => f.fieldKind === "scalar" && f.presence === FeatureSet_FieldPresence.IMPLICIT;

/** The bounds of a field's annotated rule (its items' too): lengths, item counts and numbers. */
function boundsOf(rule: FieldRule | undefined): { lengths: number[]; numbers: number[] } {
  if (rule === undefined) return { lengths: [], numbers: [] };
  const items = boundsOf(rule.items);
  const lengths = [rule.minLen, rule.maxLen, ...items.lengths].filter((n): n is number => n !== undefined);
  const numbers = [rule.min, rule.max]
    .filter((n): n is bigint => n !== undefined)
    .map(Number)
    .concat([rule.minItems, rule.maxItems].filter((n): n is number => n !== undefined));
  return { lengths, numbers };
}

/** Every request field of every keyhold.v2 service, with the messages they hold. */
function requestFields(): DescField[] {
  const seen = new Set<DescMessage>();
  const fields: DescField[] = [];
  const visit = (m: DescMessage): void => {
    if (seen.has(m)) return;
    seen.add(m);
    for (const f of m.fields) {
      fields.push(f);
      if (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message")) visit(f.message);
    }
  };
  for (const s of [ApisService, KeysService, IdentitiesService, RatelimitService, PermissionsService]) for (const m of s.methods) visit(m.input);
  return fields;
}

const ALL = requestFields().map((f) => boundsOf(fieldRule(f)));

const around = (ns: Iterable<number>): number[] => [...new Set([...ns].flatMap((n) => [n - 1, n, n + 1]))].filter((n) => n >= 0);

/** String lengths worth trying: each length bound of the protos' field rules, minus one, exactly, plus one. */
export const LENGTHS = around(ALL.flatMap((b) => b.lengths).filter((n) => n <= 2048)).sort((a, b) => a - b);

/** Numbers at and around every numeric bound of the protos' field rules. */
export const BOUND_NUMBERS = around(ALL.flatMap((b) => b.numbers)).sort((a, b) => a - b);

/** The bounds that apply to a field: its own rule's when it has one, else every bound. */
export function boundsFor(field: DescField): { lengths: number[]; numbers: number[] } {
  const own = boundsOf(fieldRule(field));
  return {
    lengths: own.lengths.length === 0 ? LENGTHS : around(own.lengths.filter((n) => n <= 2048)),
    numbers: own.numbers.length === 0 ? BOUND_NUMBERS : around(own.numbers),
  };
}

export const EDGE_NUMBERS = [
  0,
  -1,
  1,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  -(2 ** 53),
  1e308,
  -1e308,
  1.5,
  -0.5,
  5e-324,
  new Raw("9007199254740993"),
  new Raw("9223372036854775807"),
  new Raw("9223372036854775808"),
  new Raw("-9223372036854775808"),
  new Raw("18446744073709551616"),
  new Raw("1e400"),
  new Raw("-0"),
  new Raw("1.0"),
  new Raw("1E3"),
  new Raw("NaN"),
  new Raw("Infinity"),
  new Raw("01"),
  "1",
  "0",
  "-1",
  "NaN",
  "Infinity",
  "1e3",
  "0x10",
  " 1",
];

/** Strings that trip encoders, collations, patterns and length counting. */
export const WEIRD_STRINGS = [
  "",
  " ",
  "a ",
  " a",
  "\t",
  "\n",
  "\r\n",
  "\u0000",
  "a\u0000b",
  "\u0001\u001f\u007f",
  "\u0085\u00a0",
  "😀",
  "👩‍👩‍👧‍👦",
  "e\u0301",
  "\u202eabc",
  "مرحبا",
  "\u200b",
  "\ufeff",
  "\ud800",
  "\udc00",
  "a\ud83d",
  "\udfff\ud800",
  "\uffff",
  "\u{10ffff}",
  "%",
  "_",
  "\\",
  "'",
  '"',
  "' OR '1'='1",
  "*",
  "a*b*c*",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template placeholder, sent as text, is one of the hostile values
  "${x}",
  "<script>",
  "../..",
  "null",
  "İß",
];

export const boundaryString = (field: DescField): fc.Arbitrary<string> =>
  fc
    .tuple(fc.constantFrom(...boundsFor(field).lengths), fc.constantFrom("a", "_", "😀", "é", "\u0000", "trailing space"))
    .map(([n, unit]) => (unit === "trailing space" ? (n === 0 ? "" : `${"a".repeat(n - 1)} `) : unit.repeat(n)));

/** The seeded resources a field may name. */
const REFS: Record<string, WorldName[]> = {
  apiId: ["apiId"],
  keyId: ["keyId"],
  key: ["key"],
  identity: ["identityId", "externalId"],
  externalId: ["externalId"],
  namespace: ["namespaceName", "namespaceId"],
  identifier: ["identifier"],
  permission: ["permissionSlug", "permissionId"],
  role: ["roleName", "roleId"],
  roles: ["roleName"],
  permissions: ["permissionSlug"],
  migrationId: ["migrationId"],
};

const CHOICES: Record<string, string[]> = {
  operation: ["set", "increment", "decrement"],
  interval: ["daily", "monthly"],
  prefix: ["fz", "sk_live"],
  search: ["fuzz", "a"],
  tags: ["env=test", "path=/v1"],
  description: ["fuzzed", ""],
  migrationId: ["m1"],
};

const fresh = fc.stringMatching(/^[a-z][a-z0-9_]{2,10}$/);

/** A plausible string for a field: mostly a seeded resource, a listed choice or a fresh valid name. */
export function plausibleString(field: DescField): fc.Arbitrary<string | Ref> {
  const fq = `${field.parent.typeName}.${field.name}`;
  if (fq === "keyhold.v2.VerifyKeyRatelimit.name") return fc.constantFrom(new Ref("ratelimitName"), "fuzz_shared", "inline_rl");
  if (fq === "keyhold.v2.VerifyKeyRequest.permissions") {
    return fc.constantFrom(new Ref("permissionSlug"), new Ref("permissionSlug", " OR other.perm"), "a AND (b OR c)", "(unclosed", "a AND");
  }
  if (fq === "keyhold.v2.CreateRoleRequest.permissions") return fc.oneof(fc.constant(new Ref("permissionSlug")), fresh);
  const refs = REFS[field.jsonName];
  const choices = CHOICES[field.jsonName];
  const arbs: Array<{ arbitrary: fc.Arbitrary<string | Ref>; weight: number }> = [];
  if (refs !== undefined) arbs.push({ arbitrary: fc.constantFrom(...refs.map((r) => new Ref(r))), weight: 4 });
  // Fields with a fixed set of values get other strings from the mutations only.
  if (choices !== undefined) arbs.push({ arbitrary: fc.constantFrom(...choices), weight: 4 });
  else arbs.push({ arbitrary: fresh, weight: 1 });
  return fc.oneof(...arbs);
}

/** A seeded value spoiled slightly: trailing space, other case, an awkward suffix. */
export function nearMiss(field: DescField): fc.Arbitrary<Ref | string> {
  const refs = REFS[field.jsonName];
  if (refs === undefined) return fc.constantFrom(...WEIRD_STRINGS);
  return fc.oneof(
    fc.tuple(fc.constantFrom(...refs), fc.constantFrom(" ", "  ", "\u0000", "😀", "%", "_", "*", "x", "\ud800")).map(([r, s]) => new Ref(r, s)),
    fc.constantFrom(...refs).map((r) => new Ref(r, "", true)),
  );
}

const PLAUSIBLE_NUMBERS: Record<string, number[]> = {
  duration: [1000, 60_000],
  cost: [0, 1, 2],
  expiration: [0, 60_000],
  byteLength: [16, 32],
  amount: [1, 100],
  refillDay: [1, 15, 31],
  remaining: [0, 10, 1000],
  value: [0, 1, 5],
};

const isInt32 = (t: ScalarType): boolean => t === ScalarType.INT32 || t === ScalarType.SINT32 || t === ScalarType.SFIXED32;

/** A plausible integer (or the seeded future time) for a number field. */
export function plausibleNumber(field: DescField & { scalar: ScalarType }): fc.Arbitrary<number | Ref> {
  if (field.jsonName === "expires") return fc.constant(new Ref("future"));
  if (field.jsonName === "limit") return isInt32(field.scalar) ? fc.integer({ min: 1, max: 100 }) : fc.constantFrom(1, 5, 100);
  const known = PLAUSIBLE_NUMBERS[field.jsonName];
  return known === undefined ? fc.integer({ min: 0, max: 1000 }) : fc.constantFrom(...known);
}

/** A distinct, valid-looking identifier for item i of a wide list. */
export const wideItem = (i: number): string => `w${i}`;
