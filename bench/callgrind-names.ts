// Names for callgrind's functions (bench/where.ts): the JavaScript that V8
// compiled, which callgrind knows only by address, from the code map that
// `node --perf-basic-prof` writes (`<start> <size> <name>` a line, in hex), and
// every name made comparable between two builds of keyhold.

/** A code map's entries: start, size, name; sorted by start. */
export type CodeMap = Array<[number, number, string]>;

/** A code map's entries (start, size, name), sorted by start, for a binary search. */
export function codeMap(text: string): CodeMap {
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l): [number, number, string] => {
      const [start, size, ...name] = l.split(" ");
      return [Number.parseInt(start as string, 16), Number.parseInt(size as string, 16), name.join(" ")];
    })
    .sort((a, b) => a[0] - b[0]);
}

export function nameAt(map: CodeMap, address: number): string | undefined {
  let lo = 0;
  let hi = map.length - 1;
  let found: [number, number, string] | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const entry = map[mid] as [number, number, string];
    if (entry[0] <= address) {
      found = entry;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found !== undefined && address < found[0] + found[1] ? found[2] : undefined;
}

/** One function's name as every build spells it: `JS parseJson src/transport/decode.js`, `v8::internal::String::SlowFlatten`. */
export function normalise(raw: string, checkout: string, map: CodeMap): string {
  const jit = /^\?\?\?:0x([0-9a-f]+)/.exec(raw);
  if (jit !== null) {
    const named = nameAt(map, Number.parseInt(jit[1] as string, 16));
    if (named === undefined) return "(code V8 made and did not name)";
    return named
      .replace(/^JS:[*^~+]?/, "JS ")
      .replace(/^RegExp:/, "RegExp ")
      .replace(/^JS (?= )/, "JS (anonymous)")
      .replace(`file://${checkout}/dist/`, "")
      .replace(/\S*\/node_modules\//, "node_modules/")
      .replace(/:\d+:\d+$/, "")
      .replace(/\s+$/, "");
  }
  // `file:function [object]`: the function, without its arguments.
  const fn = raw
    .replace(/ \[[^\]]*\]$/, "")
    .replace(/^[^:]*:(?!:)/, "")
    .replaceAll("(anonymous namespace)", "{anonymous}");
  const paren = fn.indexOf("(");
  return paren > 0 ? fn.slice(0, paren) : fn;
}
