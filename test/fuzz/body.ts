// The fuzzed body model: plain JSON plus three leaves the JSON text needs but a
// JS value cannot say: literal text (numbers beyond double precision, `NaN`,
// thousands of nesting levels), objects with repeated keys, and references to
// the seeded resources (resolved when the case is sent).
import type { World, WorldName } from "./world.js";

/** Literal JSON text, written as is. */
export class Raw {
  constructor(readonly text: string) {}
}

/** An object written with these entries in order, repeated keys included. */
export class Dup {
  constructor(readonly entries: ReadonlyArray<readonly [string, Body]>) {}
}

/** A seeded resource's value, optionally decorated (a suffix, a case change). */
export class Ref {
  constructor(
    readonly name: WorldName,
    readonly suffix = "",
    readonly upper = false,
  ) {}

  resolve(w: World): string | number {
    const v = w[this.name];
    if (typeof v === "number" && this.suffix === "" && !this.upper) return v;
    const s = `${v}${this.suffix}`;
    return this.upper ? s.toUpperCase() : s;
  }
}

export type Body = null | boolean | number | string | Raw | Dup | Ref | Body[] | { [k: string]: Body };

export const isPlainObject = (v: unknown): v is { [k: string]: Body } =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Raw) && !(v instanceof Dup) && !(v instanceof Ref);

/** The body's JSON text. Iterative on Raw, so deep nesting costs no recursion here. */
export function serialize(v: Body, w: World): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof Ref) return JSON.stringify(v.resolve(w));
  if (v instanceof Dup) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${serialize(x, w)}`).join(",")}}`;
  if (Array.isArray(v)) return `[${v.map((x) => serialize(x, w)).join(",")}]`;
  if (isPlainObject(v))
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${serialize(x, w)}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

/** `[[[…]]]` nested `depth` levels, as text. */
export const deepArray = (depth: number): Raw => new Raw(`${"[".repeat(depth)}${"]".repeat(depth)}`);

/** `{"a":{"a":…{}}}` nested `depth` levels, as text. */
export const deepObject = (depth: number): Raw => new Raw(`${'{"a":'.repeat(depth)}{}${"}".repeat(depth)}`);

/** For failure messages: the start of a long body. */
export const clip = (text: string, max = 2000): string => (text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`);
