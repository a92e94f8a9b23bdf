// Names for callgrind's functions (bench/where.ts): the JavaScript that V8
// compiled, which callgrind knows only by address, from the code map that
// `node --perf-basic-prof` writes (`<start> <size> <name>` a line, in hex), and
// every name made comparable between two builds of keyhold.

/**
 * A code map: its entries (start, size, name, line in the file) sorted by
 * start, and the largest size. V8 reuses the space of code it has freed, so an
 * address can lie in several entries: the one written last is the code there.
 */
export interface CodeMap {
  entries: Array<[number, number, string, number]>;
  largest: number;
}

export function codeMap(text: string): CodeMap {
  const entries = text
    .split("\n")
    .filter((l) => l !== "")
    .map((l, i): [number, number, string, number] => {
      const [start, size, ...name] = l.split(" ");
      return [Number.parseInt(start as string, 16), Number.parseInt(size as string, 16), name.join(" "), i];
    })
    .sort((a, b) => a[0] - b[0] || a[3] - b[3]);
  return { entries, largest: Math.max(0, ...entries.map((e) => e[1])) };
}

/** The name of the code at an address: of the entries that hold it, the one written last. */
export function nameAt(map: CodeMap, address: number): string | undefined {
  const { entries } = map;
  let lo = 0;
  let hi = entries.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((entries[mid] as [number, number, string, number])[0] <= address) lo = mid + 1;
    else hi = mid - 1;
  }
  // entries[hi] is the last to start at or before the address; earlier ones may reach it too.
  let found: [number, number, string, number] | undefined;
  for (let i = hi; i >= 0; i--) {
    const e = entries[i] as [number, number, string, number];
    if (e[0] + map.largest <= address) break;
    if (address < e[0] + e[1] && (found === undefined || e[3] > found[3])) found = e;
  }
  return found?.[2];
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
