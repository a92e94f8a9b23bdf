// Usage counts for the dashboard's charts, from verifications to the chart's
// query: the analytics recorder writes them behind (never the verify path
// itself) into the analytics roll-ups, and the charts read them back per key,
// API and workspace by minute, hour and day, within the workspace only. The
// roll-ups read alone, rows put in by hand, are in usage-rollups.test.ts.
import { beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../../src/core/errors.js";
import { queryUsage } from "../../src/domain/keys/usage-query.js";
import type { UsagePoint } from "../../src/storage/analytics-usage.js";
import { sweepVerificationUsage } from "../../src/storage/usage.js";
import { ensureWorkspace } from "../../src/storage/workspaces.js";
import { api, key, verify, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

const MIN = 60_000;
const HOUR = 3_600_000;

describe("verification usage counts", () => {
  const h = useHarness();
  // Three hours ago, on the hour: the minutes and hours below are all in the past and whole.
  const T0 = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
  let rk: string;
  let apiId: string;
  const keys = {} as Record<"plain" | "credits" | "limited" | "disabled" | "perms", { keyId: string; key: string }>;

  const at = <T>(ms: number, fn: () => Promise<T>) => withClock(h, ms, fn);
  const code = async (k: string, fields: Record<string, unknown> = {}) => (await verify(h, rk, k, fields)).code as string;
  const usage = (q: { apiId?: string; keyId?: string; from?: number; to?: number; granularity?: "minute" | "hour" | "day"; workspaceId?: string }) =>
    queryUsage({ main: h.db.pool, analytics: h.db.pool }, { workspaceId: h.workspaceId, from: T0, to: T0 + 2 * HOUR, granularity: "minute", ...q });
  const p = (time: number, outcome: string, count: number): UsagePoint => ({ time, outcome, count });

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    apiId = await api(h, rk);
    keys.plain = await key(h, rk, apiId);
    keys.credits = await key(h, rk, apiId, { credits: { remaining: 1 } });
    keys.limited = await key(h, rk, apiId, { ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }] });
    keys.disabled = await key(h, rk, apiId, { enabled: false });
    keys.perms = await key(h, rk, apiId, { permissions: ["documents.read"] });

    // Minute 0 of T0's hour.
    await at(T0 + 10_000, async () => {
      expect(await code(keys.plain.key)).toBe("VALID");
      expect(await code(keys.plain.key)).toBe("VALID");
      expect(await code(keys.credits.key)).toBe("VALID");
      expect(await code(keys.credits.key)).toBe("USAGE_EXCEEDED");
      expect(await code(keys.credits.key)).toBe("USAGE_EXCEEDED");
      expect(await code(keys.limited.key)).toBe("VALID");
      expect(await code(keys.limited.key)).toBe("RATE_LIMITED");
      expect(await code(keys.disabled.key)).toBe("DISABLED");
      expect(await code(keys.perms.key, { permissions: "documents.write" })).toBe("INSUFFICIENT_PERMISSIONS");
      expect(await code("unknown_key_1234567890abcdef")).toBe("NOT_FOUND");
    });
    // Minute 1, still within T0's hour.
    await at(T0 + MIN + 5_000, async () => {
      expect(await code(keys.plain.key)).toBe("VALID");
      expect(await code(keys.limited.key)).toBe("VALID");
    });
    // The next hour.
    await at(T0 + HOUR + 30 * MIN, async () => {
      expect(await code(keys.plain.key)).toBe("VALID");
      expect(await code(keys.disabled.key)).toBe("DISABLED");
    });
    await h.deps.analytics.flush();
  });

  it("per API by minute: every outcome of every key of the API, exactly", async () => {
    expect(await usage({ apiId })).toEqual([
      p(T0, "DISABLED", 1),
      p(T0, "INSUFFICIENT_PERMISSIONS", 1),
      p(T0, "RATE_LIMITED", 1),
      p(T0, "USAGE_EXCEEDED", 2),
      p(T0, "VALID", 4),
      p(T0 + MIN, "VALID", 2),
      p(T0 + HOUR + 30 * MIN, "DISABLED", 1),
      p(T0 + HOUR + 30 * MIN, "VALID", 1),
    ]);
  });

  it("per API by hour and by day: the minutes summed into UTC-aligned buckets", async () => {
    expect(await usage({ apiId, granularity: "hour" })).toEqual([
      p(T0, "DISABLED", 1),
      p(T0, "INSUFFICIENT_PERMISSIONS", 1),
      p(T0, "RATE_LIMITED", 1),
      p(T0, "USAGE_EXCEEDED", 2),
      p(T0, "VALID", 6),
      p(T0 + HOUR, "DISABLED", 1),
      p(T0 + HOUR, "VALID", 1),
    ]);
    const day = await usage({ apiId, granularity: "day" });
    // T0 and T0 + 1h may fall on two UTC days (shortly after midnight); the totals are the same.
    expect(day.every((x) => x.time % 86_400_000 === 0)).toBe(true);
    const total = (pts: UsagePoint[], outcome: string) => pts.filter((x) => x.outcome === outcome).reduce((n, x) => n + x.count, 0);
    expect(total(day, "VALID")).toBe(7);
    expect(total(day, "DISABLED")).toBe(2);
  });

  it("a range that is not on bucket edges is widened to whole buckets", async () => {
    expect(await usage({ apiId, from: T0 + MIN + 30_000, to: T0 + MIN + 31_000 })).toEqual([p(T0 + MIN, "VALID", 2)]);
    expect(await usage({ apiId, from: T0 + 2 * MIN, to: T0 + HOUR })).toEqual([]);
  });

  it("per key by minute and by hour", async () => {
    expect(await usage({ keyId: keys.plain.keyId })).toEqual([p(T0, "VALID", 2), p(T0 + MIN, "VALID", 1), p(T0 + HOUR + 30 * MIN, "VALID", 1)]);
    expect(await usage({ keyId: keys.credits.keyId })).toEqual([p(T0, "USAGE_EXCEEDED", 2), p(T0, "VALID", 1)]);
    expect(await usage({ keyId: keys.limited.keyId, granularity: "hour" })).toEqual([p(T0, "RATE_LIMITED", 1), p(T0, "VALID", 2)]);
    expect(await usage({ keyId: keys.disabled.keyId, granularity: "hour" })).toEqual([p(T0, "DISABLED", 1), p(T0 + HOUR, "DISABLED", 1)]);
    expect(await usage({ apiId, keyId: keys.perms.keyId, granularity: "hour" })).toEqual([p(T0, "INSUFFICIENT_PERMISSIONS", 1)]);
  });

  it("the workspace's total includes NOT_FOUND, which belongs to no key or API", async () => {
    expect(await usage({ granularity: "hour" })).toEqual([
      p(T0, "DISABLED", 1),
      p(T0, "INSUFFICIENT_PERMISSIONS", 1),
      p(T0, "NOT_FOUND", 1),
      p(T0, "RATE_LIMITED", 1),
      p(T0, "USAGE_EXCEEDED", 2),
      p(T0, "VALID", 6),
      p(T0 + HOUR, "DISABLED", 1),
      p(T0 + HOUR, "VALID", 1),
    ]);
  });

  it("another workspace's usage is not visible, even by its API's or key's id", async () => {
    const otherRk = await h.rootKey(["*"], "usage-other");
    const otherWs = (await ensureWorkspace(h.db.pool, "usage-other", Date.now())).id;
    const otherApi = await api(h, otherRk);
    const otherKey = await key(h, otherRk, otherApi);
    await at(T0 + 20_000, async () => {
      expect((await verify(h, otherRk, otherKey.key)).code).toBe("VALID");
      // Our key, verified with the other workspace's root key: NOT_FOUND there, nothing here.
      expect((await verify(h, otherRk, keys.plain.key)).code).toBe("NOT_FOUND");
    });
    await h.deps.analytics.flush();
    expect(await usage({ apiId: otherApi })).toEqual([]);
    expect(await usage({ keyId: otherKey.keyId })).toEqual([]);
    expect(await usage({ keyId: keys.plain.keyId, to: T0 + MIN })).toEqual([p(T0, "VALID", 2)]);
    expect(await usage({ to: T0 + MIN })).toContainEqual(p(T0, "NOT_FOUND", 1));
    expect(await usage({ workspaceId: otherWs, apiId: otherApi })).toEqual([p(T0, "VALID", 1)]);
    expect(await usage({ workspaceId: otherWs, to: T0 + MIN })).toEqual([p(T0, "NOT_FOUND", 1), p(T0, "VALID", 1)]);
    expect(await usage({ workspaceId: otherWs, apiId })).toEqual([]);
  });

  it("a hot verification runs no SQL statement for its counts", async () => {
    const k = await key(h, rk, apiId);
    await verify(h, rk, k.key); // caches the key
    // Nothing left behind the timers, so they write nothing while counting.
    await h.deps.usage.flush();
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();
    let data: { code?: string } = {};
    const n = await h.countQueries(async () => {
      data = await verify(h, rk, k.key);
    });
    expect(data.code).toBe("VALID");
    expect(n).toBe(0);
    await h.deps.analytics.flush();
    const now = Date.now();
    const mine = await queryUsage(
      { main: h.db.pool, analytics: h.db.pool },
      { workspaceId: h.workspaceId, keyId: k.keyId, from: now - 10 * MIN, to: now + MIN, granularity: "hour" },
    );
    // The warm-up and the counted verification.
    expect(mine.reduce((n, x) => n + x.count, 0)).toBe(2);
  });

  it("refuses ranges it will not answer, naming the field", async () => {
    const invalid = async (q: Parameters<typeof usage>[0], location: string, message: RegExp) => {
      const err = await usage(q).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("err:svc:application:invalid_input");
      expect((err as AppError).errors?.[0]).toMatchObject({ location, message: expect.stringMatching(message) });
    };
    // A day of minutes is fine; a minute more is not.
    expect(await usage({ from: T0, to: T0 + 1_440 * MIN })).toEqual(expect.any(Array));
    await invalid({ from: T0, to: T0 + 1_441 * MIN }, "body.to", /1441 minutes.*at most 1440/);
    await invalid({ from: T0, to: T0 + 1_441 * HOUR, granularity: "hour" }, "body.to", /1441 hours/);
    await invalid({ from: T0, to: T0 }, "body.to", /after from/);
    await invalid({ from: -1 }, "body.from", /unix milliseconds/);
    await invalid({ to: 1.5 }, "body.to", /unix milliseconds/);
    await invalid({ granularity: "week" as "day" }, "body.granularity", /minute, hour, day/);
  });

  // The old table is no longer written (see src/storage/usage.ts); its sweep still
  // empties it on upgraded databases, checked here on rows put in by hand.
  it("verification_usage's retention sweep deletes only minutes older than its limit, in batches", async () => {
    const row = (keyId: string, bucketStart: number) => ({ workspaceId: "ws_sweep", apiId: "api_sweep", keyId, bucketStart, outcome: "VALID", count: 1 });
    // All before the verifications above, so the sweep's count is these rows' alone.
    const limit = T0 - HOUR;
    const old = Array.from({ length: 16 }, (_, i) => row(`key_old_${i}`, limit - MIN - (i % 4) * MIN));
    const kept = [row("key_kept", limit), row("key_kept", limit + MIN)];
    const rows = [...old, ...kept];
    await h.db.pool.query(
      `INSERT INTO verification_usage (workspace_id, api_id, key_id, bucket_start_m, outcome, count) VALUES ${rows.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}`,
      rows.flatMap((r) => [r.workspaceId, r.apiId, r.keyId, r.bucketStart, r.outcome, r.count]),
    );
    const left = async () => {
      const [found] = await h.db.pool.query("SELECT key_id, bucket_start_m FROM verification_usage WHERE workspace_id = 'ws_sweep' ORDER BY bucket_start_m");
      return (found as Array<{ key_id: string; bucket_start_m: number | string }>).map((r) => [r.key_id, Number(r.bucket_start_m)]);
    };
    expect(await sweepVerificationUsage(h.db.pool, limit, 5)).toBe(16);
    expect(await left()).toEqual([
      ["key_kept", limit],
      ["key_kept", limit + MIN],
    ]);
    expect(await sweepVerificationUsage(h.db.pool, limit)).toBe(0);
  });
});
