// Reads a V8 .cpuprofile written by `node --cpu-prof` and names where the time of
// the last `windowSeconds` went (the load; start-up and module loading fall
// before it): self time by function and by package or source file, idle excluded.
import fs from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Busy (non-idle) sampled time in the window, ms. */
  busyMs: number;
  functions: { name: string; share: number }[];
  places: { name: string; share: number }[];
}

/** Where a script lives, short: `src/gateway/plugin.ts`-like for ours, the package for a dependency. */
function placeOf(url: string, fallback: string): string {
  if (url === "") return fallback;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1] as string;
  const ours = /\/dist\/(.*)\.js$/.exec(url);
  if (ours) return `${ours[1]}.ts`;
  return url.replace(/^node:/, "node:");
}

export function summarizeProfile(file: string, windowSeconds: number, top = 12): ProfileSummary {
  const p = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const from = p.endTime - windowSeconds * 1e6;
  const self = new Map<number, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t < from) continue;
    const id = p.samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const fns = new Map<string, number>();
  const places = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const cf = byId.get(id)?.callFrame;
    if (cf === undefined || cf.functionName === "(idle)") continue;
    busy += us;
    const place = placeOf(cf.url, cf.functionName);
    const name = cf.url === "" ? cf.functionName : `${cf.functionName || "(anonymous)"} ${place}:${cf.lineNumber + 1}`;
    fns.set(name, (fns.get(name) ?? 0) + us);
    places.set(place, (places.get(place) ?? 0) + us);
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, share: busy > 0 ? us / busy : 0 }));
  return { busyMs: busy / 1000, functions: rank(fns), places: rank(places) };
}

export function formatSummary(title: string, s: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  return [
    `${title}: ${s.busyMs.toFixed(0)} ms busy in the window`,
    "  self time by package or file:",
    ...s.places.map((x) => `    ${pct(x.share)}  ${x.name}`),
    "  self time by function:",
    ...s.functions.map((x) => `    ${pct(x.share)}  ${x.name}`),
  ].join("\n");
}
