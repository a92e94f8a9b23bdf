// Verifications over the last hour, per minute and by outcome, as stacked SVG
// bars with a legend of totals (and the same numbers as a table for screen readers).
import { Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { dashboard } from "./api.js";
import { ErrorNote, Spinner, useLoad } from "./ui.js";

const MINUTE = 60_000;
const SPAN = 60;
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

interface Usage {
  buckets: Map<number, Map<string, number>>;
  totals: Map<string, number>;
  from: number;
}

async function loadUsage(workspaceId: string, apiId: string, keyId: string): Promise<Usage> {
  const to = Math.ceil(Date.now() / MINUTE) * MINUTE;
  const from = to - SPAN * MINUTE;
  const res = await dashboard.getUsage({ workspaceId, apiId, keyId, from: BigInt(from), to: BigInt(to), granularity: Granularity.MINUTE });
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
  return { buckets, totals, from };
}

function Chart({ usage }: { usage: Usage }) {
  const W = 720;
  const H = 160;
  const bar = W / SPAN;
  const max = Math.max(1, ...[...usage.buckets.values()].map((b) => [...b.values()].reduce((a, n) => a + n, 0)));
  const outcomes = [...usage.totals.keys()].sort();
  return (
    <svg viewBox={`0 0 ${W} ${H + 16}`} class="chart" role="img" aria-label={`Verifications per minute over the last hour; the highest minute had ${max}`}>
      <line x1="0" y1={H} x2={W} y2={H} stroke="#adb5bd" />
      <text x="0" y={H + 13} class="axis">
        −60 min
      </text>
      <text x={W} y={H + 13} class="axis" text-anchor="end">
        now
      </text>
      <text x="2" y="10" class="axis">
        {max}
      </text>
      {[...usage.buckets.entries()].map(([t, b]) => {
        const x = ((t - usage.from) / MINUTE) * bar;
        let y = H;
        return outcomes.map((o) => {
          const n = b.get(o) ?? 0;
          if (n === 0) return null;
          const h = (n / max) * (H - 14);
          y -= h;
          return (
            <rect key={`${t}-${o}`} x={x + 1} y={y} width={bar - 2} height={h} fill={colorOf(o)}>
              <title>{`${new Date(t).toISOString().slice(11, 16)} UTC: ${n} ${o}`}</title>
            </rect>
          );
        });
      })}
    </svg>
  );
}

/** Usage of an API (keyId empty) or of one key. */
export function UsagePanel({ workspaceId, apiId, keyId = "" }: { workspaceId: string; apiId: string; keyId?: string }) {
  const usage = useLoad(() => loadUsage(workspaceId, apiId, keyId), [workspaceId, apiId, keyId]);
  const total = usage.data ? [...usage.data.totals.values()].reduce((a, n) => a + n, 0) : 0;
  return (
    <section class="usage" aria-labelledby="usage-title">
      <div class="row">
        <h2 id="usage-title">Verifications, last hour</h2>
        <button type="button" onClick={usage.reload} disabled={usage.loading}>
          {usage.loading ? "Loading…" : "Refresh usage"}
        </button>
      </div>
      <p class="hint">Counts are written a couple of seconds after the verifications.</p>
      {usage.error !== undefined ? (
        <ErrorNote message={usage.error} retry={usage.reload} />
      ) : usage.data === undefined ? (
        <Spinner />
      ) : total === 0 ? (
        <p class="empty">No verifications in the last hour.</p>
      ) : (
        <>
          <Chart usage={usage.data} />
          <ul class="legend" aria-label="Totals by outcome">
            {[...usage.data.totals.entries()].sort().map(([o, n]) => (
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
