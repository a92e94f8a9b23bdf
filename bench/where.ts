// `npm run bench:where -- <dir>`: where the instructions of a request went, for
// the builds that `BENCH_AB_INSTRUCTIONS=1 BENCH_AB_KEEP=<dir> npm run bench:ab`
// kept (bench/ab.ts): for each build its fewest round's callgrind dump, read with
// callgrind_annotate, the JavaScript that V8 compiled named from the build's
// code map (callgrind alone knows it only as `???:0x…`). Printed, in
// instructions a request: each build's largest self costs and its own
// functions' (src/) inclusive costs; for every build after the first, the
// functions whose self cost changed most against the first's.
//
// Names are made comparable between builds: the checkout's path and a
// function's line are left out, and so is V8's tier mark (`*` optimised, `^`
// baseline, `~` interpreted), which a function changes as it warms up.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { codeMap, normalise } from "./callgrind-names.js";

interface Kept {
  name: string;
  checkout: string;
  scenario: string;
  requests: number;
  instructionsPerRequest: number;
}

const TOP = Number(process.env.BENCH_WHERE_TOP ?? 25);

/** Instructions by function of a dump, self or inclusive, named. */
function costs(kept: Kept, dir: string, inclusive: boolean): Map<string, number> {
  const out = execFileSync("callgrind_annotate", [`--inclusive=${inclusive ? "yes" : "no"}`, "--threshold=100", path.join(dir, `${kept.name}.callgrind`)], {
    maxBuffer: 256 << 20,
  }).toString();
  const map = codeMap(fs.readFileSync(path.join(dir, `${kept.name}.perf.map`), "utf8"));
  const byName = new Map<string, number>();
  for (const line of out.split("\n")) {
    const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (m === null || (m[2] as string).includes("PROGRAM TOTALS")) continue;
    const name = normalise(m[2] as string, kept.checkout, map);
    byName.set(name, (byName.get(name) ?? 0) + Number((m[1] as string).replaceAll(",", "")) / kept.requests);
  }
  return byName;
}

const largest = (m: Map<string, number>, n: number, keep: (name: string) => boolean = () => true) =>
  [...m]
    .filter(([name]) => keep(name))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n);

const row = (instructions: number, name: string) => `${instructions.toFixed(0).padStart(9)}  ${name}`;

function main(): void {
  const dir = process.argv[2];
  if (dir === undefined || !fs.existsSync(path.join(dir, "builds.json"))) {
    console.error("usage: npm run bench:where -- <dir>   (the BENCH_AB_KEEP directory of a BENCH_AB_INSTRUCTIONS=1 bench:ab run)");
    process.exit(2);
  }
  const builds = JSON.parse(fs.readFileSync(path.join(dir, "builds.json"), "utf8")) as Kept[];
  const selfs = builds.map((b) => costs(b, dir, false));
  for (const [i, b] of builds.entries()) {
    const self = selfs[i] as Map<string, number>;
    const ours = costs(b, dir, true);
    console.log(`\n${b.name} (${b.checkout}), ${b.scenario}: ${b.instructionsPerRequest} instructions a request, its fewest round`);
    console.log(`  the largest self costs, instructions a request:`);
    for (const [name, n] of largest(self, TOP)) console.log(`  ${row(n, name)}`);
    console.log(`  keyhold's own functions (src/), inclusive of what they call:`);
    for (const [name, n] of largest(ours, TOP, (name) => name.includes(" src/"))) console.log(`  ${row(n, name)}`);
  }
  const first = builds[0] as Kept;
  for (const [i, b] of builds.entries()) {
    if (i === 0) continue;
    const a = selfs[0] as Map<string, number>;
    const c = selfs[i] as Map<string, number>;
    const names = new Set([...a.keys(), ...c.keys()]);
    const changes = [...names].map((name): [string, number] => [name, (c.get(name) ?? 0) - (a.get(name) ?? 0)]).sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]));
    console.log(
      `\n${b.name} against ${first.name}: ${b.instructionsPerRequest - first.instructionsPerRequest} instructions a request; the self costs that changed most:`,
    );
    for (const [name, d] of changes.slice(0, TOP)) console.log(`  ${(d >= 0 ? "+" : "") + d.toFixed(0).padStart(8)}  ${name}`);
  }
}

main();
