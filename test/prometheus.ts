// Samples read back from the Prometheus text format that /metrics serves, for
// the tests of what keyhold counts (src/transport/metrics.test.ts,
// test/integration/operations.test.ts): one reader, two ways to pick a sample.

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of the metric `name`, with its labels (none for a line without braces). */
export function samples(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const inner = /\{(.*)\}/.exec(line)?.[1] ?? "";
    const labels = Object.fromEntries([...inner.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]));
    out.push({ labels, value: Number(line.slice(line.lastIndexOf(" ") + 1)) });
  }
  return out;
}

/** The first sample of `name` whose labels include `labels` (any others too); 0 when there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels);
  return samples(text, name).find((s) => want.every(([k, v]) => s.labels[k] === v))?.value ?? 0;
}

/** The sample of `name` whose labels are exactly `labels`; undefined when there is none. */
export function exactSample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels);
  return samples(text, name).find((s) => Object.keys(s.labels).length === want.length && want.every(([k, v]) => s.labels[k] === v))?.value;
}
