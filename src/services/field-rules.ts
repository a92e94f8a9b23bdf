// Field rules, declared once in proto/ as protovalidate annotations
// (`(buf.validate.field)`), read here once per message type and compiled into
// plain checks: no CEL and no descriptor walk per request. Every front door runs
// them before the operation (withFieldRules, applied in server/registry.ts), the
// OpenAPI document describes the same rules (gateway/openapi.ts), and the domain
// keeps only the rules the protos cannot say (docs/errors.md, "Field errors").
//
// Only the annotations keyhold uses are compiled: required; string min_len,
// max_len, pattern and in; int32/int64 gte and lte; repeated min_items, max_items
// and string items. Any other rule in proto/ fails at startup (and in npm test),
// so an annotation can never be silently ignored.
import { type DescField, type DescMessage, type DescService, getOption, hasOption, isFieldSet, type Message, ScalarType } from "@bufbuild/protobuf";
import {
  type FieldRules,
  FieldRulesSchema,
  field as fieldRulesExt,
  Int32RulesSchema,
  Int64RulesSchema,
  RepeatedRulesSchema,
  StringRulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { type FieldError, invalidInput } from "../core/errors.js";
import type { Call, ServiceEntry } from "./types.js";

/** What one field must satisfy, as read from its annotations. Lengths count characters (code points). */
export interface FieldRule {
  /** A string or list that is empty counts as missing (proto3 cannot tell "" from absent). */
  required: boolean;
  minLen?: number;
  maxLen?: number;
  /** An RE2 pattern that is also a JavaScript one (checked when compiled). */
  pattern?: string;
  in?: readonly string[];
  min?: bigint;
  max?: bigint;
  minItems?: number;
  maxItems?: number;
  /** The rule of each item of a repeated string field. */
  items?: FieldRule;
}

/**
 * Update fields that take a value or null travel in `Nullable*` wrappers; their
 * value obeys the rules of the field it sets, declared there. JSON names the
 * field itself (`body.name`), never the wrapper's `value`.
 */
const RULES_OF: Record<string, string> = {
  "keyhold.v2.UpdateKeyRequest.name": "keyhold.v2.CreateKeyRequest.name",
  "keyhold.v2.UpdateKeyRequest.external_id": "keyhold.v2.CreateKeyRequest.external_id",
  "keyhold.v2.UpdateKeyRequest.expires": "keyhold.v2.CreateKeyRequest.expires",
  "keyhold.v2.UpdateKeyCredits.remaining": "keyhold.v2.KeyCredits.remaining",
};

/** An update field that takes a value or null (`keyhold.v2.Nullable*`, one field `value`). */
export const isNullableWrapper = (m: DescMessage): boolean => m.typeName.startsWith("keyhold.v2.Nullable");

// ---- reading the annotations ----

/** The rules set in an annotation's message, by field name; anything outside `allowed` is refused. */
function setRules(msg: Message, schema: DescMessage, allowed: readonly string[], where: string): Set<string> {
  const set = new Set(schema.fields.filter((f) => isFieldSet(msg, f)).map((f) => f.name));
  for (const name of set) if (!allowed.includes(name)) unsupported(where, `${schema.name}.${name}`);
  return set;
}

function unsupported(where: string, what: string): never {
  throw new Error(`field-rules: ${where} uses ${what}, which keyhold does not compile; add it to src/services/field-rules.ts or remove it`);
}

function readRules(r: FieldRules, where: string): FieldRule {
  setRules(r, FieldRulesSchema, ["required", "string", "int32", "int64", "repeated"], where);
  const rule: FieldRule = { required: r.required };
  const t = r.type;
  switch (t.case) {
    case "string": {
      const s = t.value;
      const set = setRules(s, StringRulesSchema, ["min_len", "max_len", "pattern", "in"], where);
      if (set.has("min_len")) rule.minLen = Number(s.minLen);
      if (set.has("max_len")) rule.maxLen = Number(s.maxLen);
      if (set.has("pattern")) {
        new RegExp(s.pattern); // throws at startup on a pattern JavaScript cannot run
        rule.pattern = s.pattern;
      }
      if (set.has("in")) rule.in = [...s.in];
      break;
    }
    case "int32":
    case "int64": {
      const n = t.value;
      setRules(n, t.case === "int32" ? Int32RulesSchema : Int64RulesSchema, ["gte", "lte"], where);
      if (n.greaterThan.case === "gte") rule.min = BigInt(n.greaterThan.value);
      if (n.lessThan.case === "lte") rule.max = BigInt(n.lessThan.value);
      break;
    }
    case "repeated": {
      const rep = t.value;
      const set = setRules(rep, RepeatedRulesSchema, ["min_items", "max_items", "items"], where);
      if (set.has("min_items")) rule.minItems = Number(rep.minItems);
      if (set.has("max_items")) rule.maxItems = Number(rep.maxItems);
      if (rep.items !== undefined) rule.items = readRules(rep.items, `${where}[]`);
      break;
    }
  }
  return rule;
}

const ruleCache = new Map<DescField, FieldRule | undefined>();

/** The rule annotated on a field (or on the field a wrapper stands for), if any. */
export function fieldRule(f: DescField): FieldRule | undefined {
  if (ruleCache.has(f)) return ruleCache.get(f);
  let rule: FieldRule | undefined;
  const alias = RULES_OF[`${f.parent.typeName}.${f.name}`];
  if (alias !== undefined) {
    const target = aliasTarget(f, alias);
    rule = fieldRule(target);
  } else if (hasOption(f, fieldRulesExt)) {
    rule = readRules(getOption(f, fieldRulesExt), `${f.parent.typeName}.${f.name}`);
  }
  ruleCache.set(f, rule);
  return rule;
}

function aliasTarget(f: DescField, alias: string): DescField {
  const [msgName, fieldName] = [alias.slice(0, alias.lastIndexOf(".")), alias.slice(alias.lastIndexOf(".") + 1)];
  const file = f.parent.file;
  const all = [file, ...file.dependencies];
  for (const fd of all) {
    for (const m of fd.messages) {
      if (m.typeName !== msgName) continue;
      const target = m.fields.find((x) => x.name === fieldName);
      if (target !== undefined) return target;
    }
  }
  throw new Error(`field-rules: ${f.parent.typeName}.${f.name} takes the rules of ${alias}, which does not exist`);
}

// ---- compiling the checks ----

/** Adds the problems of one message (at `prefix`, e.g. "credits.") to `out`. */
type Check = (msg: Record<string, unknown>, prefix: string, out: FieldError[]) => void;

const add = (out: FieldError[], field: string, message: string, fix?: string): void => {
  out.push({ location: `body.${field}`, message, ...(fix === undefined ? {} : { fix }) });
};

/** Code points, counted only when UTF-16 length cannot settle the bound (every code point is 1 or 2 units). */
function lengthProblem(field: string, value: string, rule: FieldRule): string | undefined {
  const { minLen, maxLen } = rule;
  const units = value.length;
  if ((minLen === undefined || units >= 2 * minLen) && (maxLen === undefined || units <= maxLen)) return undefined;
  const len = [...value].length;
  if (minLen !== undefined && len < minLen) return `${field} must be at least ${minLen} character${minLen === 1 ? "" : "s"} long (got ${len}).`;
  if (maxLen !== undefined && len > maxLen) return `${field} must be at most ${maxLen} characters long (got ${len}).`;
  return undefined;
}

const listed = (values: readonly string[]): string => {
  const quoted = values.map((v) => JSON.stringify(v));
  return quoted.length === 1 ? (quoted[0] as string) : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
};

interface Problem {
  message: string;
  fix?: string;
}

/**
 * Patterns said in words rather than as a regular expression. `[^ ]$` is on
 * names that the database compares under a collation ignoring trailing spaces,
 * where `a` and `a ` would be the same row.
 */
const PATTERN_WORDS: Record<string, (field: string) => Problem> = {
  "[^ ]$": (field) => ({ message: `${field} must not end with a space.`, fix: `Trim the trailing spaces from ${field}.` }),
};

/** One string's problem (the first: length, then pattern, then the allowed values), or undefined. */
function stringCheck(rule: FieldRule): (field: string, value: string) => Problem | undefined {
  const { pattern } = rule;
  const re = pattern === undefined ? undefined : new RegExp(pattern);
  const mismatch = pattern === undefined ? undefined : (PATTERN_WORDS[pattern] ?? ((field: string) => ({ message: `${field} must match ${pattern}.` })));
  const allowed = rule.in === undefined ? undefined : new Set(rule.in);
  const hasLength = rule.minLen !== undefined || rule.maxLen !== undefined;
  return (field, value) => {
    if (hasLength) {
      const message = lengthProblem(field, value, rule);
      if (message !== undefined) return { message };
    }
    if (re !== undefined && mismatch !== undefined && !re.test(value)) return mismatch(field);
    if (allowed !== undefined && !allowed.has(value)) return { message: `${field} must be ${listed(rule.in ?? [])} (got ${JSON.stringify(value)}).` };
    return undefined;
  };
}

function numberCheck(rule: FieldRule): (field: string, value: number | bigint) => string | undefined {
  const { min, max } = rule;
  // int32 values are numbers: compare them as numbers, without a BigInt per request.
  const minN = min === undefined ? undefined : Number(min);
  const maxN = max === undefined ? undefined : Number(max);
  return (field, value) => {
    if (typeof value === "number") {
      if (minN !== undefined && value < minN) return `${field} must be at least ${min} (got ${value}).`;
      if (maxN !== undefined && value > maxN) return `${field} must be at most ${max} (got ${value}).`;
      return undefined;
    }
    if (min !== undefined && value < min) return `${field} must be at least ${min} (got ${value}).`;
    if (max !== undefined && value > max) return `${field} must be at most ${max} (got ${value}).`;
    return undefined;
  };
}

/** A list's own rules, then its items' (none when the list itself is wrong); true when the list itself is wrong. */
function listCheck(f: DescField, rule: FieldRule): (msg: Record<string, unknown>, prefix: string, out: FieldError[]) => boolean {
  const name = f.localName;
  const json = f.jsonName;
  const item = rule.items === undefined ? undefined : stringCheck(rule.items);
  const { minItems, maxItems, required } = rule;
  return (msg, prefix, out) => {
    const values = msg[name] as readonly unknown[];
    const field = prefix + json;
    let problem: string | undefined;
    if (required && values.length === 0) problem = `${field} is required.`;
    else if (maxItems !== undefined && values.length > maxItems) problem = `${field} must have at most ${maxItems} items (got ${values.length}).`;
    else if (minItems !== undefined && values.length < minItems) problem = `${field} must have at least ${minItems} item${minItems === 1 ? "" : "s"}.`;
    if (problem !== undefined) {
      add(out, field, problem);
      return true;
    }
    if (item !== undefined) {
      for (let i = 0; i < values.length; i++) {
        const at = `${field}[${i}]`;
        const p = item(at, values[i] as string);
        if (p !== undefined) add(out, at, p.message, p.fix);
      }
    }
    return false;
  };
}

/** The check of a string or integer value of the field named `json` (undefined values are not passed). */
type ValueCheck = (value: unknown, prefix: string, out: FieldError[]) => void;

function scalarCheck(scalar: ScalarType, json: string, where: string, rule: FieldRule): ValueCheck {
  if (scalar === ScalarType.STRING) {
    const check = stringCheck(rule);
    const required = rule.required;
    return (v, prefix, out) => {
      const value = v as string;
      const field = prefix + json;
      if (value === "") {
        if (required) return add(out, field, `${field} is required.`, `Send ${field}.`);
      }
      const p = check(field, value);
      if (p !== undefined) add(out, field, p.message, p.fix);
    };
  }
  if (scalar === ScalarType.INT32 || scalar === ScalarType.INT64) {
    const check = numberCheck(rule);
    return (v, prefix, out) => {
      const field = prefix + json;
      const p = check(field, v as number | bigint);
      if (p !== undefined) add(out, field, p);
    };
  }
  throw new Error(`field-rules: ${where} is a ${ScalarType[scalar]}, which has no compiled check`);
}

const compiled = new Map<DescMessage, Check | null>();

/**
 * The checks of a message type and of the messages it holds, or null when none
 * of its fields has a rule. Each message's checks are made into one function
 * by `new Function` (as the JSON door's request checks are, gateway/json-check.ts),
 * which reads each field by name; a closure per field used to read it by a
 * variable key. Names reach the source only as JSON string literals from the
 * descriptors.
 */
function compile(desc: DescMessage): Check | null {
  if (compiled.has(desc)) return compiled.get(desc) as Check | null;
  compiled.set(desc, null); // a message holding itself stops here
  const lit = (text: string): string => JSON.stringify(text);
  // Each step: source reading the message `msg`, calling C[i] (fns[i]).
  const steps: string[] = [];
  const fns: Array<ValueCheck | Check> = [];
  const step = (fn: ValueCheck | Check, source: (c: string) => string): void => {
    steps.push(source(`C[${fns.length}]`));
    fns.push(fn);
  };
  for (const f of desc.fields) {
    const name = f.localName;
    const json = f.jsonName;
    if (f.fieldKind === "scalar") {
      const rule = fieldRule(f);
      if (rule !== undefined) {
        step(scalarCheck(f.scalar, json, `${desc.typeName}.${f.name}`, rule), (c) => `v = msg[${lit(name)}]; if (v !== undefined) ${c}(v, prefix, out);`);
      }
    } else if (f.fieldKind === "list") {
      const rule = fieldRule(f);
      if (rule !== undefined && f.listKind === "message" && rule.items !== undefined)
        unsupported(`${desc.typeName}.${f.name}`, "item rules on a list of messages");
      const own = rule === undefined ? undefined : listCheck(f, rule);
      const inner = f.listKind === "message" ? compile(f.message) : null;
      if (inner !== null) {
        // An oversized list is refused as a whole, without reading each of its messages.
        step(
          (msg: Record<string, unknown>, prefix: string, out: FieldError[]) => {
            if (own?.(msg, prefix, out)) return;
            const items = msg[name] as Record<string, unknown>[];
            for (let i = 0; i < items.length; i++) inner(items[i] as Record<string, unknown>, `${prefix}${json}[${i}].`, out);
          },
          (c) => `${c}(msg, prefix, out);`,
        );
      } else if (own !== undefined) {
        step(own, (c) => `${c}(msg, prefix, out);`);
      }
    } else if (f.fieldKind === "message") {
      if (fieldRule(f) !== undefined && !isNullableWrapper(f.message)) unsupported(`${desc.typeName}.${f.name}`, "rules on a message field");
      if (isNullableWrapper(f.message)) {
        // The wrapper's value is checked with the rules of the field it sets, under the field's own name.
        const valueField = f.message.fields.find((x) => x.name === "value");
        const rule = fieldRule(f);
        if (valueField?.fieldKind === "scalar" && rule !== undefined) {
          step(
            scalarCheck(valueField.scalar, json, `${desc.typeName}.${f.name}`, rule),
            (c) => `v = msg[${lit(name)}]; if (v != null) { v = v[${lit(valueField.localName)}]; if (v !== undefined) ${c}(v, prefix, out); }`,
          );
        } else if (valueField?.fieldKind === "message") {
          const inner = compile(valueField.message);
          if (inner !== null) {
            step(
              inner,
              (c) =>
                `v = msg[${lit(name)}]; if (v != null) { v = v[${lit(valueField.localName)}]; if (v !== undefined) ${c}(v, prefix + ${lit(`${json}.`)}, out); }`,
            );
          }
        }
        continue;
      }
      const inner = compile(f.message);
      if (inner !== null) step(inner, (c) => `v = msg[${lit(name)}]; if (v !== undefined) ${c}(v, prefix + ${lit(`${json}.`)}, out);`);
    }
  }
  const check: Check | null =
    steps.length === 0
      ? null
      : (new Function("C", `return function ${desc.name}Rules(msg, prefix, out) {\n"use strict";\nlet v;\n${steps.join("\n")}\n};`)(fns) as Check);
  compiled.set(desc, check);
  return check;
}

/** The field problems of a request message, in field order; [] when it obeys its rules. */
export function fieldProblems(desc: DescMessage, msg: object): FieldError[] {
  const check = compile(desc);
  const out: FieldError[] = [];
  if (check !== null) check(msg as Record<string, unknown>, "", out);
  return out;
}

/** Compiles every method's request checks now, so a bad annotation fails at startup, not on the first call. */
export function compileService(service: DescService): void {
  for (const m of service.methods) compile(m.input);
}

/**
 * Each operation, preceded by its request's field checks: a request that breaks
 * a rule is answered 400 invalid_input naming every such field, before the
 * domain sees it. The answer is a rejected promise, as the operation's own
 * failures are, so every door handles it the same way.
 */
export function withFieldRules(entries: ServiceEntry[]): ServiceEntry[] {
  return entries.map(({ service, ops }) => {
    const checked: ServiceEntry["ops"] = { ...ops };
    for (const method of service.methods) {
      const op = ops[method.localName];
      const check = compile(method.input);
      if (op === undefined || check === null) continue;
      checked[method.localName] = (req: Record<string, unknown>, call: Call) => {
        const out: FieldError[] = [];
        check(req, "", out);
        return out.length === 0 ? op(req, call) : Promise.reject(invalidInput(out));
      };
    }
    return { service, ops: checked };
  });
}
