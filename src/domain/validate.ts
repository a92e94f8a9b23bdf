// Collects field problems and throws one 400 naming every offending field.
// Locations use the JSON names (`body.apiId`), which are also the generated
// message property names, so JSON, Connect and gRPC callers read the same text.
import { type FieldError, invalidInput } from "../core/errors.js";

interface StringRule {
  min?: number;
  max?: number;
  pattern?: RegExp;
  patternText?: string;
  /**
   * For values stored in a unique column: the database's collation ignores
   * trailing spaces when comparing, so `a` and `a ` would be the same row.
   */
  noTrailingSpace?: boolean;
}

interface NumberRule {
  min?: number;
  max?: number;
}

export class Validator {
  readonly errors: FieldError[] = [];

  add(field: string, message: string, fix?: string): void {
    this.errors.push({ location: `body.${field}`, message, ...(fix === undefined ? {} : { fix }) });
  }

  /** A required string: "" counts as missing (proto3 cannot tell them apart). */
  required(field: string, value: string, rule: StringRule = {}): void {
    if (value === "") {
      this.add(field, `${field} is required.`, `Send ${field}.`);
      return;
    }
    this.string(field, value, rule);
  }

  string(field: string, value: string | undefined, rule: StringRule): void {
    if (value === undefined) return;
    const len = [...value].length;
    if (rule.min !== undefined && len < rule.min) {
      this.add(field, `${field} must be at least ${rule.min} character${rule.min === 1 ? "" : "s"} long (got ${len}).`);
    } else if (rule.max !== undefined && len > rule.max) {
      this.add(field, `${field} must be at most ${rule.max} characters long (got ${len}).`);
    } else if (rule.pattern !== undefined && !rule.pattern.test(value)) {
      this.add(field, `${field} must match ${rule.patternText ?? rule.pattern.source}.`);
    } else if (rule.noTrailingSpace && / $/.test(value)) {
      this.add(field, `${field} must not end with a space.`, `Trim the trailing spaces from ${field}.`);
    }
  }

  number(field: string, value: number | undefined, rule: NumberRule): void {
    if (value === undefined) return;
    if (rule.min !== undefined && value < rule.min) this.add(field, `${field} must be at least ${rule.min} (got ${value}).`);
    else if (rule.max !== undefined && value > rule.max) this.add(field, `${field} must be at most ${rule.max} (got ${value}).`);
  }

  items(field: string, values: readonly string[], rule: StringRule & { maxItems?: number; minItems?: number }): void {
    if (rule.maxItems !== undefined && values.length > rule.maxItems) {
      this.add(field, `${field} must have at most ${rule.maxItems} items (got ${values.length}).`);
      return;
    }
    if (rule.minItems !== undefined && values.length < rule.minItems) {
      this.add(field, `${field} must have at least ${rule.minItems} item${rule.minItems === 1 ? "" : "s"}.`);
      return;
    }
    values.forEach((v, i) => {
      this.string(`${field}[${i}]`, v, rule);
    });
  }

  /** Throws a 400 invalid_input if anything was added. */
  done(): void {
    if (this.errors.length > 0) throw invalidInput(this.errors);
  }
}
