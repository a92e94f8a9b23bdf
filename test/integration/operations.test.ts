// The operations endpoints: Prometheus metrics at /metrics and readiness at
// /readyz (database, and Redis when configured), both without a root key.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { buildServer } from "../../src/server/bootstrap.js";
import { buildDeps } from "../../src/server/deps.js";
import { services } from "../../src/server/registry.js";
import { openDatabase } from "../../src/storage/db.js";
import { TcpProxy } from "../faults/tcp-proxy.js";
import { api, key, verify } from "../fixtures.js";
import { call, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { sample } from "../prometheus.js";

describe("operations endpoints", () => {
  const h = useHarness();
  const scrape = async () => (await h.app.inject({ method: "GET", url: "/metrics" })).body;

  it("/metrics counts requests per operation and status, verification outcomes, cache use and database statements", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    const before = await scrape();
    for (let i = 0; i < 5; i++) expect((await verify(h, rk, k.key)).code).toBe("VALID");
    expect((await verify(h, rk, "nope_123456789")).code).toBe("NOT_FOUND");
    expect((await h.post("/v2/keys.getKey", { keyId: "key_missing" }, rk)).status).toBe(404);

    const res = await h.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    const after = res.body;
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta("keyhold_requests_total", { transport: "http", operation: "keys.verifyKey", status: "200" })).toBe(6);
    expect(delta("keyhold_requests_total", { transport: "http", operation: "keys.getKey", status: "404" })).toBe(1);
    expect(delta("keyhold_request_duration_seconds_count", { transport: "http", operation: "keys.verifyKey" })).toBe(6);
    expect(delta("keyhold_verifications_total", { code: "VALID" })).toBe(5);
    expect(delta("keyhold_verifications_total", { code: "NOT_FOUND" })).toBe(1);
    expect(delta("keyhold_cache_hits_total", { cache: "keys" })).toBeGreaterThanOrEqual(4);
    expect(sample(after, "keyhold_cache_entries", { cache: "keys" })).toBeGreaterThanOrEqual(1);
    expect(sample(after, "keyhold_db_statement_duration_seconds_count", { outcome: "ok" })).toBeGreaterThan(0);
    expect(sample(after, "keyhold_db_pool_connections", { state: "open" })).toBeGreaterThan(0);
    expect(after).toContain("keyhold_process_cpu_user_seconds_total");
    expect(after).toContain("keyhold_nodejs_eventloop_lag_seconds");
    // Never a key, nor anything of a request but its operation name.
    expect(after).not.toContain(k.key);
    expect(after).not.toContain(rk);
  });

  it("a root key's first use counts one root-key cache miss, its next uses hits", async () => {
    const rk = await h.rootKey(["*"]);
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await h.post("/v2/keys.getKey", { keyId: "key_missing" }, rk)).status).toBe(404);
    const after = await scrape();
    const delta = (name: string) => sample(after, name, { cache: "root_keys" }) - sample(before, name, { cache: "root_keys" });
    expect(delta("keyhold_cache_misses_total")).toBe(1);
    expect(delta("keyhold_cache_hits_total")).toBe(2);
  });

  it("gRPC calls are counted too, by status name", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    const Keys = service(loadServices("keys_service.proto"), "KeysService");
    const client = new Keys(`127.0.0.1:${await h.grpcPort()}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${rk}`);
    const before = await scrape();
    try {
      await call(client, "verifyKey", { key: k.key }, md);
      await call(client, "getKey", { keyId: "key_missing" }, md).catch(() => undefined);
    } finally {
      client.close();
    }
    const after = await scrape();
    const delta = (labels: Record<string, string>) => sample(after, "keyhold_requests_total", labels) - sample(before, "keyhold_requests_total", labels);
    expect(delta({ transport: "grpc", operation: "keys.verifyKey", status: "OK" })).toBe(1);
    expect(delta({ transport: "grpc", operation: "keys.getKey", status: "NOT_FOUND" })).toBe(1);
  });

  it("/readyz is 200 with the database reachable and 503 naming it when not", async () => {
    const ok = await h.app.inject({ method: "GET", url: "/readyz" });
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ status: "ready", checks: { database: "ok" } });

    const { proxy, url } = await TcpProxy.inFrontOf(h.config.databaseUrl ?? "");
    const db = await openDatabase(url, { connectTimeoutMs: 1_000, queryTimeoutMs: 1_000 });
    const runtime = buildDeps({ ...h.config, databaseUrl: url }, db.pool, { info() {}, warn() {}, error() {}, debug() {} });
    const app = await buildServer({ config: h.config, deps: runtime.deps, services: services(runtime.deps) });
    try {
      expect((await app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
      await proxy.setMode("refuse");
      const down = await app.inject({ method: "GET", url: "/readyz" });
      expect(down.statusCode).toBe(503);
      expect(JSON.parse(down.body)).toEqual({ status: "not ready", checks: { database: "unreachable" } });
      await proxy.setMode("forward");
      await expect.poll(async () => (await app.inject({ method: "GET", url: "/readyz" })).statusCode, { timeout: 10_000 }).toBe(200);
    } finally {
      await app.close();
      await runtime.close();
      await db.close();
      await proxy.close();
    }
  });
  // prom-client's process collectors (a GC observer, an event-loop monitor) cannot be
  // stopped: made per instance, they held every closed instance, pools and caches
  // included (~40 MB each), for the life of the process.
  it("a closed instance, scraped once, is garbage: nothing process-wide holds it", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const built = async () => {
      const db = await openDatabase(h.config.databaseUrl ?? "");
      const runtime = buildDeps(h.config, db.pool, { info() {}, warn() {}, error() {}, debug() {} });
      const app = await buildServer({ config: h.config, deps: runtime.deps, services: services(runtime.deps) });
      const scraped = await app.inject({ method: "GET", url: "/metrics" });
      expect(scraped.body).toContain("keyhold_process_cpu_seconds_total");
      expect(scraped.body).toContain("keyhold_nodejs_gc_duration_seconds");
      await app.close();
      await runtime.close();
      await db.close();
      return new WeakRef(runtime.deps);
    };
    const refs = [await built(), await built()];
    await expect
      .poll(
        () => {
          gc();
          return refs.filter((r) => r.deref() !== undefined).length;
        },
        { timeout: 10_000 },
      )
      .toBe(0);
  });
});
