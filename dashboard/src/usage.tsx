// Verifications over a chosen range (the last hour, day, 7 or 30 days) by
// outcome, as stacked SVG bars with a legend of totals. The counts come from
// GetUsage, which reads the same analytics roll-ups as the analytics API.
import { useState } from "preact/hooks";
import { Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { dashboard } from "./api.js";
import { ErrorNote, Spinner, useLoad } from "./ui.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const COLORS: Record<string, string> = {
  VALID: "#2f9e44",
  RATE_LIMITED: "#f08c00",
  USAGE_EXCEEDED: "#e8590c",
  DISABLED: "#868e96",
  EXPIRED: "#ae3ec9",
  FORBIDDEN: "#c92a2a",
  INSUFFICIENT_PERMISSIONS: "#1971c2",
  NOT_FOUND: "#495057",
};
const colorOf = (outcome: string) => COLORS[outcome] ?? "#5f3dc4";

// Times are shown in UTC, as everywhere in the dashboard: the buckets are UTC
// hours and days, so a local date would split one bar's day in two.
const hourMinute = (t: number) => new Date(t).toISOString().slice(11, 16);
const dateFormat = new Intl.DateTimeFormat("en", { month: "short", day: "numeric", timeZone: "UTC" });
const monthDay = (t: number) => dateFormat.format(t);

interface Range {
  /** The button's text; lowercased, the heading's and the chart's words for the range. */
  label: string;
  granularity: Granularity;
  /** One bar's width in time, and its name. */
  bucket: number;
  unit: "minute" | "hour" | "day";
  /** Bars in the range, the newest one the bucket now is in. */
  buckets: number;
  /** The time axis: a label every `tick`, counted from `anchor` (unix ms). */
  tick: number;
  anchor: number;
  axisLabel: (t: number) => string;
}

// Each range is at most a few hundred bars (the server answers up to 1,440), and
// its bars are as narrow as still leave a gap between them on a 720-wide chart.
const RANGES: Range[] = [
  { label: "Last hour", granularity: Granularity.MINUTE, bucket: MINUTE, unit: "minute", buckets: 60, tick: 10 * MINUTE, anchor: 0, axisLabel: hourMinute },
  { label: "Last day", granularity: Granularity.HOUR, bucket: HOUR, unit: "hour", buckets: 24, tick: 3 * HOUR, anchor: 0, axisLabel: hourMinute },
  { label: "Last 7 days", granularity: Granularity.HOUR, bucket: HOUR, unit: "hour", buckets: 7 * 24, tick: DAY, anchor: 0, axisLabel: monthDay },
  // Mondays: 1970-01-05 was one.
  { label: "Last 30 days", granularity: Granularity.DAY, bucket: DAY, unit: "day", buckets: 30, tick: 7 * DAY, anchor: 4 * DAY, axisLabel: monthDay },
];
const words = (r: Range) => r.label.toLowerCase();

interface Usage {
  range: Range;
  buckets: Map<number, Map<string, number>>;
  totals: Map<string, number>;
  from: number;
}

async function loadUsage(workspaceId: string, apiId: string, keyId: string, range: Range): Promise<Usage> {
  const to = Math.ceil(Date.now() / range.bucket) * range.bucket;
  const from = to - range.buckets * range.bucket;
  const res = await dashboard.getUsage({ workspaceId, apiId, keyId, from: BigInt(from), to: BigInt(to), granularity: range.granularity });
  const buckets = new Map<number, Map<string, number>>();
  const totals = new Map<string, number>();
  for (const p of res.points) {
    const t = Number(p.time);
    const n = Number(p.count);
    const b = buckets.get(t) ?? new Map<string, number>();
    b.set(p.outcome, (b.get(p.outcome) ?? 0) + n);
    buckets.set(t, b);
    totals.set(p.outcome, (totals.get(p.outcome) ?? 0) + n);
  }
  return { range, buckets, totals, from };
}

function Chart({ usage }: { usage: Usage }) {
  const { range } = usage;
  const W = 720;
  const H = 160;
  const bar = W / range.buckets;
  // Narrow bars (7 days of hours) keep a thinner gap, or they would be mostly gap.
  const gap = bar >= 8 ? 2 : 1;
  const max = Math.max(1, ...[...usage.buckets.values()].map((b) => [...b.values()].reduce((a, n) => a + n, 0)));
  const outcomes = [...usage.totals.keys()].sort();
  const ticks: number[] = [];
  for (let i = 0; i < range.buckets; i++) {
    const t = usage.from + i * range.bucket;
    if ((t - range.anchor) % range.tick === 0) ticks.push(i);
  }
  // A day's bar is that date: its tick and label sit under the bar's middle.
  // Other ticks mark an instant: the edge between two bars.
  const labelX = (i: number) => i * bar + (range.unit === "day" ? bar / 2 : 0);
  const anchorAt = (x: number) => (x < 16 ? "start" : x > W - 16 ? "end" : "middle");
  const tipTime = (t: number) => (range.unit === "day" ? new Date(t).toISOString().slice(0, 10) : new Date(t).toISOString().slice(0, 16).replace("T", " "));
  return (
    <svg
      viewBox={`0 0 ${W} ${H + 16}`}
      class="chart"
      role="img"
      aria-label={`Verifications per ${range.unit} over the ${words(range)}; the highest ${range.unit} had ${max}`}
    >
      <line x1="0" y1={H} x2={W} y2={H} stroke="#adb5bd" />
      {ticks.map((i) => (
        <g key={i}>
          <line x1={labelX(i)} y1={H} x2={labelX(i)} y2={H + 4} stroke="#adb5bd" />
          <text x={labelX(i)} y={H + 14} class="axis" text-anchor={anchorAt(labelX(i))}>
            {range.axisLabel(usage.from + i * range.bucket)}
          </text>
        </g>
      ))}
      <text x="2" y="10" class="axis">
        {max}
      </text>
      {[...usage.buckets.entries()].map(([t, b]) => {
        const x = ((t - usage.from) / range.bucket) * bar;
        let y = H;
        return outcomes.map((o) => {
          const n = b.get(o) ?? 0;
          if (n === 0) return null;
          const h = (n / max) * (H - 14);
          y -= h;
          return (
            <rect key={`${t}-${o}`} x={x + gap / 2} y={y} width={bar - gap} height={h} fill={colorOf(o)}>
              <title>{`${tipTime(t)} UTC: ${n} ${o}`}</title>
            </rect>
          );
        });
      })}
    </svg>
  );
}

/** Usage of an API (keyId empty) or of one key. */
export function UsagePanel({ workspaceId, apiId, keyId = "" }: { workspaceId: string; apiId: string; keyId?: string }) {
  const [range, setRange] = useState<Range>(RANGES[0] as Range);
  const usage = useLoad(() => loadUsage(workspaceId, apiId, keyId, range), [workspaceId, apiId, keyId, range]);
  // The chart and legend show the range they were loaded for until the next one comes.
  const shown = usage.data;
  const total = shown ? [...shown.totals.values()].reduce((a, n) => a + n, 0) : 0;
  return (
    <section class="usage" aria-labelledby="usage-title" aria-busy={usage.loading}>
      <div class="row">
        <h2 id="usage-title">Verifications, {words(range)}</h2>
        <fieldset class="ranges">
          <legend class="sr-only">Time range</legend>
          {RANGES.map((r) => (
            <button key={r.label} type="button" aria-pressed={r === range} onClick={() => setRange(r)}>
              {r.label}
            </button>
          ))}
        </fieldset>
        <button type="button" onClick={usage.reload} disabled={usage.loading}>
          {usage.loading ? "Loading…" : "Refresh usage"}
        </button>
      </div>
      <p class="hint">Times are UTC. Counts are written a few seconds after the verifications.</p>
      {usage.error !== undefined ? (
        <ErrorNote message={usage.error} retry={usage.reload} />
      ) : shown === undefined ? (
        <Spinner />
      ) : total === 0 ? (
        <p class="empty">No verifications in the {words(shown.range)}.</p>
      ) : (
        <>
          <Chart usage={shown} />
          <ul class="legend" aria-label="Totals by outcome">
            {[...shown.totals.entries()].sort().map(([o, n]) => (
              <li key={o} data-outcome={o}>
                <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
                  <rect width="10" height="10" fill={colorOf(o)} />
                </svg>
                {o}: <strong>{n}</strong>
              </li>
            ))}
            <li data-outcome="total">
              Total: <strong>{total}</strong>
            </li>
          </ul>
        </>
      )}
    </section>
  );
}
