import { PerformanceObserver } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { exactSample as sample } from "../../test/prometheus.js";
import { EVENT_LOOP_MONITOR_MS, Metrics } from "./metrics.js";

describe("Metrics.request: requests and latency by transport, operation and status", () => {
  it("counts each series apart, 200 and '200' as one, and buckets each latency once", async () => {
    const m = new Metrics();
    m.request("http", "keys.verifyKey", 200, 0.0004);
    m.request("http", "keys.verifyKey", 200, 0.003);
    m.request("http", "keys.verifyKey", "200", 0.02);
    m.request("http", "keys.verifyKey", 429, 0.0004);
    m.request("grpc", "keys.verifyKey", "OK", 20);
    m.request("http", "keys.getKey", 404, 0.001);
    const text = await m.text();
    const requests = (transport: string, operation: string, status: string) => sample(text, "keyhold_requests_total", { transport, operation, status });
    expect(requests("http", "keys.verifyKey", "200")).toBe(3);
    expect(requests("http", "keys.verifyKey", "429")).toBe(1);
    expect(requests("grpc", "keys.verifyKey", "OK")).toBe(1);
    expect(requests("http", "keys.getKey", "404")).toBe(1);
    expect(requests("grpc", "keys.getKey", "404")).toBeUndefined();
    const bucket = (transport: string, le: string) => sample(text, "keyhold_request_duration_seconds_bucket", { transport, operation: "keys.verifyKey", le });
    expect(bucket("http", "0.0005")).toBe(2);
    expect(bucket("http", "0.005")).toBe(3);
    expect(bucket("http", "0.025")).toBe(4);
    expect(bucket("http", "+Inf")).toBe(4);
    // Beyond the last bound: only in +Inf and the count.
    expect(bucket("grpc", "10")).toBe(0);
    expect(bucket("grpc", "+Inf")).toBe(1);
    expect(sample(text, "keyhold_request_duration_seconds_count", { transport: "http", operation: "keys.verifyKey" })).toBe(4);
    expect(sample(text, "keyhold_request_duration_seconds_sum", { transport: "http", operation: "keys.verifyKey" })).toBeCloseTo(0.0238, 6);
  });
});

describe("keyhold_nodejs_gc_duration_seconds", () => {
  it("counts every collection, those Node hands over together included", async () => {
    const m = new Metrics();
    const counted = async (): Promise<number> => {
      const text = await m.text();
      let n = 0;
      for (const kind of ["minor", "major", "incremental", "weakcb"]) n += sample(text, "keyhold_nodejs_gc_duration_seconds_count", { kind }) ?? 0;
      return n;
    };
    const before = await counted();
    // An observer of its own, inside the window of the two counts.
    let lists = 0;
    let entries = 0;
    const own = new PerformanceObserver((list) => {
      lists++;
      entries += list.getEntries().length;
    });
    own.observe({ entryTypes: ["gc"] });
    // Enough allocation in one synchronous turn for many scavenges.
    let held: object[] = [];
    for (let i = 0; i < 3_000_000; i++) {
      held.push({ i });
      if (held.length > 1_000) held = [];
    }
    await new Promise((r) => setTimeout(r, 200));
    own.disconnect();
    const after = await counted();
    // The case this is about: Node handed several collections over at once.
    expect(entries).toBeGreaterThan(lists);
    // prom-client's own histogram counted one a list (lists here), never more.
    expect(after - before).toBeGreaterThanOrEqual(entries);
  });
});

describe("keyhold_nodejs_eventloop_lag_*", () => {
  it("reads the monitor's whole tick, so a loop never late still reads about EVENT_LOOP_MONITOR_MS (what bench:cold-ab takes off)", async () => {
    const m = new Metrics();
    await m.text(); // a scrape resets the monitor's histogram
    // A loop with nothing to do for a while: the monitor's ticks are on time.
    await new Promise((r) => setTimeout(r, 30 * EVENT_LOOP_MONITOR_MS));
    const text = await m.text();
    const p50 = sample(text, "keyhold_nodejs_eventloop_lag_p50_seconds", {});
    const min = sample(text, "keyhold_nodejs_eventloop_lag_min_seconds", {});
    // Were the figure the time past each tick, an idle loop would read ~0. A timer
    // may fire a little early against the last tick's time, hence 0.8.
    expect(p50).toBeGreaterThanOrEqual((0.8 * EVENT_LOOP_MONITOR_MS) / 1000);
    expect(min).toBeGreaterThanOrEqual((0.5 * EVENT_LOOP_MONITOR_MS) / 1000);
  });
});
