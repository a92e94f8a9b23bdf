// Prometheus metrics (prom-client), one registry per keyhold instance (Node's
// process metrics in one registry per process): requests and latency per
// operation and status, verification outcomes, cache counters, database pool
// and statement latency, Redis state. Served at GET /metrics.
// What the hot path pays: a cached counter child's inc() and one histogram
// observe() per request; cache and pool figures are read only when scraped.
import { PerformanceObserver, constants as perfConstants } from "node:perf_hooks";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** What the metrics read of a cache. */
interface CacheFigures {
  readonly stats: { hits: number; misses: number; evictions: number };
  readonly size: number;
}

import type { AnalyticsRecorder } from "../domain/analytics/recorder.js";
import type { Deps } from "../domain/deps.js";
import { type Pool, poolFigures } from "../storage/db.js";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Node's process metrics (CPU, memory, event-loop lag, garbage collection), made
 * once per process and scraped with every instance's own. prom-client's
 * collectors cannot be stopped (a GC PerformanceObserver, an event-loop delay
 * monitor): made per instance, they kept each closed instance's registry alive,
 * and through its gauges the whole instance (its pools and caches), ~40 MB per
 * instance built and closed in one process.
 */
let processRegistry: Registry | undefined;

/**
 * The tick of the event-loop monitor behind keyhold_nodejs_eventloop_lag_*, ms
 * (prom-client's own default, set here so that readers of the figures share it).
 * Node's monitorEventLoopDelay records the whole time between two ticks, not the
 * time past one: an idle process reads ~10.2 ms at its p50 and ~11 ms at its p99
 * (Node 20.20), so how late the loop was is a figure less this (bench/cold-ab.ts).
 */
export const EVENT_LOOP_MONITOR_MS = 10;

function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: "keyhold_", eventLoopMonitoringPrecision: EVENT_LOOP_MONITOR_MS });
    everyCollection(processRegistry);
  }
  return processRegistry;
}

const GC_KINDS: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};

/**
 * keyhold_nodejs_gc_duration_seconds observing every garbage collection.
 * prom-client's (15.1.3) observes only the first entry of each list Node hands
 * its PerformanceObserver, and Node hands over the collections of a busy turn
 * together: a cold-key load counted ~105 scavenges a run where --trace-gc
 * counted ~113, and one synchronous allocation loop 1 for ~24 (bench/README.md,
 * "The miss path's p99 taken apart"). Replaced here by a histogram of the same
 * name, labels and buckets; prom-client's observer still runs, into a
 * histogram no registry serves (it cannot be stopped).
 */
function everyCollection(registry: Registry): void {
  const name = "keyhold_nodejs_gc_duration_seconds";
  registry.removeSingleMetric(name);
  const histogram = new Histogram({
    name,
    help: "Garbage collection duration by kind, one of major, minor, incremental or weakcb (every collection).",
    labelNames: ["kind"],
    buckets: [0.001, 0.01, 0.1, 1, 2, 5],
    registers: [registry],
  });
  const byKind = new Map<number, ReturnType<typeof histogram.labels>>();
  for (const [kind, label] of Object.entries(GC_KINDS)) byKind.set(Number(kind), histogram.labels(label));
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) byKind.get((entry as { detail?: { kind?: number } }).detail?.kind ?? -1)?.observe(entry.duration / 1000);
  }).observe({ entryTypes: ["gc"] });
}

export class Metrics {
  /** This instance's metrics; /metrics serves them with the process's (text()). */
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;

  private readonly statements: Histogram<"outcome">;
  // The per-request series are plain numbers, handed to prom-client only when
  // scraped: a labelled child's inc() and observe() hash their labels on every
  // call, ~1.5 µs of a hot verification's ~30 µs of CPU here (profile).
  private readonly requestCounts = new Map<string, { labels: Labels; n: number }>();
  private readonly latencies = new Map<string, LatencySeries>();
  /** The same series by transport, then operation (request()'s way to them). */
  private readonly series = new Map<string, Map<string, { latency: LatencySeries; statuses: Map<string | number, { labels: Labels; n: number }> }>>();
  private readonly verificationCounts = new Map<string, number>();

  /** The exposition text of GET /metrics: the process's metrics, then this instance's. */
  text(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }

  constructor() {
    const registers = [this.registry];
    processMetrics();
    const requestCounts = this.requestCounts;
    new Counter({
      name: "keyhold_requests_total",
      help: "Requests answered, by transport (the door: http for JSON /v2, connect, grpc-web, grpc), operation and status (HTTP status on http, Connect code name on connect and grpc-web, gRPC status name on grpc).",
      labelNames: ["transport", "operation", "status"],
      registers,
      collect() {
        this.reset();
        for (const { labels, n } of requestCounts.values()) this.inc(labels, n);
      },
    });
    this.registry.registerMetric(latencyHistogram(this.latencies) as never);
    const verificationCounts = this.verificationCounts;
    new Counter({
      name: "keyhold_verifications_total",
      help: "keys.verifyKey outcomes by code (VALID, NOT_FOUND, DISABLED, EXPIRED, RATE_LIMITED, USAGE_EXCEEDED, INSUFFICIENT_PERMISSIONS).",
      labelNames: ["code"],
      registers,
      collect() {
        this.reset();
        for (const [code, n] of verificationCounts) this.inc({ code }, n);
      },
    });
    this.statements = new Histogram({
      name: "keyhold_db_statement_duration_seconds",
      help: "Database statement latency, by outcome (ok, error).",
      labelNames: ["outcome"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
  }

  request(transport: string, operation: string, status: string | number, seconds: number): void {
    // Found through Maps of the label values themselves: keys joined from them
    // were two new strings a request, each hashed in full for its lookup.
    let operations = this.series.get(transport);
    if (operations === undefined) this.series.set(transport, (operations = new Map()));
    let s = operations.get(operation);
    if (s === undefined) {
      const lkey = `${transport}|${operation}`;
      let latency = this.latencies.get(lkey);
      if (latency === undefined) {
        latency = { labels: { transport, operation }, buckets: new Array<number>(LATENCY_BUCKETS.length).fill(0), sum: 0, count: 0 };
        this.latencies.set(lkey, latency);
      }
      operations.set(operation, (s = { latency, statuses: new Map() }));
    }
    let c = s.statuses.get(status);
    if (c === undefined) {
      // 200 and "200" are one series, as their label is.
      const key = `${transport}|${operation}|${status}`;
      c = this.requestCounts.get(key);
      if (c === undefined) this.requestCounts.set(key, (c = { labels: { transport, operation, status: String(status) }, n: 0 }));
      s.statuses.set(status, c);
    }
    c.n++;
    const h = s.latency;
    // Cumulative at scrape time; here only the first bucket the value fits in.
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[i] as number)) i++;
    if (i < LATENCY_BUCKETS.length) (h.buckets[i] as number)++;
    h.sum += seconds;
    h.count++;
  }

  verification(code: string): void {
    this.verificationCounts.set(code, (this.verificationCounts.get(code) ?? 0) + 1);
  }

  statement(seconds: number, ok: boolean): void {
    this.statements.labels(ok ? "ok" : "error").observe(seconds);
  }

  /** Figures read at scrape time: caches, the database pool, Redis. */
  watch(deps: Pick<Deps, "keyCache" | "rootKeyCache" | "namespaceCache" | "overrideCache" | "degraded">, pool: Pool, redisConfigured: boolean): void {
    const registers = [this.registry];
    const caches: Record<string, CacheFigures> = {
      keys: deps.keyCache,
      root_keys: deps.rootKeyCache,
      namespaces: deps.namespaceCache,
      overrides: deps.overrideCache,
    };
    const perCache = (name: string, help: string, read: (c: CacheFigures) => number, type: "counter" | "gauge") => {
      const Metric = type === "counter" ? Counter : Gauge;
      new Metric({
        name,
        help,
        labelNames: ["cache"],
        registers,
        collect(this: Counter<"cache"> | Gauge<"cache">) {
          this.reset();
          for (const [label, c] of Object.entries(caches)) {
            if (this instanceof Counter) this.labels(label).inc(read(c));
            else this.labels(label).set(read(c));
          }
        },
      });
    };
    perCache("keyhold_cache_hits_total", "Lookups answered from the cache (records and remembered misses).", (c) => c.stats.hits, "counter");
    perCache("keyhold_cache_misses_total", "Lookups the cache could not answer (read from the database).", (c) => c.stats.misses, "counter");
    perCache("keyhold_cache_evictions_total", "Records pushed out to make room (not invalidations).", (c) => c.stats.evictions, "counter");
    perCache("keyhold_cache_entries", "Records held.", (c) => c.size, "gauge");

    new Gauge({
      name: "keyhold_db_pool_connections",
      help: "Database pool connections by state: open (all), idle, and requests waiting for one (queued).",
      labelNames: ["state"],
      registers,
      collect() {
        const f = poolFigures(pool);
        this.set({ state: "open" }, f.open);
        this.set({ state: "idle" }, f.idle);
        this.set({ state: "queued" }, f.queued);
      },
    });
    new Gauge({
      name: "keyhold_redis_up",
      help: "1 when the shared rate-limit counters in Redis are reachable, 0 when not; absent without REDIS_URL.",
      registers,
      collect() {
        this.reset();
        if (redisConfigured) this.set(deps.degraded().includes("redis") ? 0 : 1);
      },
    });
  }

  /** The analytics write-behind (the analytics API and the usage charts), read at scrape time. */
  watchAnalytics(analytics: Pick<AnalyticsRecorder, "pendingRows" | "dropped">): void {
    const registers = [this.registry];
    new Gauge({
      name: "keyhold_analytics_pending_events",
      help: "Verification and rate-limit events held in memory, waiting to be written to the analytics tables.",
      registers,
      collect() {
        this.set(analytics.pendingRows);
      },
    });
    new Counter({
      name: "keyhold_analytics_dropped_total",
      help: "Events left out of analytics because too many were waiting to be written (the database unreachable for long).",
      registers,
      collect() {
        this.reset();
        this.inc(analytics.dropped);
      },
    });
  }
}

type Labels = Record<string, string>;

interface LatencySeries {
  labels: Labels;
  /** Values per bucket (not cumulative); values above the last bound count in `count` only. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * keyhold_request_duration_seconds as a metric object of prom-client's registry
 * (get() gives what a Histogram's get() gives: cumulative `_bucket` lines with
 * `le`, `_sum`, `_count`), read from plain numbers kept per request.
 */
function latencyHistogram(series: Map<string, LatencySeries>) {
  const name = "keyhold_request_duration_seconds";
  const help = "Time from receiving a request to answering it, by transport and operation.";
  return {
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    reset() {
      series.clear();
    },
    async get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const s of series.values()) {
        let cumulative = 0;
        LATENCY_BUCKETS.forEach((le, i) => {
          cumulative += s.buckets[i] as number;
          values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: `${name}_bucket` });
        });
        values.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: `${name}_bucket` });
        values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
        values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` });
      }
      return { name, help, type: "histogram", aggregator: "sum", values };
    },
  };
}

const byDeps = new WeakMap<object, Metrics>();

/** The metrics of the instance these deps belong to (made once per instance). */
export function metricsOf(deps: object): Metrics {
  let m = byDeps.get(deps);
  if (m === undefined) byDeps.set(deps, (m = new Metrics()));
  return m;
}
