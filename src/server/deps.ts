import type { InvalidationKind } from "../cache/invalidation.js";
import { Invalidations } from "../cache/invalidation.js";
import { RecordCache } from "../cache/verification-cache.js";
import type { Logger } from "../core/logger.js";
import { type KeyRecord, keyRecordSize } from "../core/records.js";
import { AnalyticsRecorder } from "../domain/analytics/recorder.js";
import { sweepRawAnalytics } from "../domain/analytics/retention.js";
import { sweepAuditLog } from "../domain/audit/retention.js";
import { type Clock, systemClock } from "../domain/clock.js";
import type { Deps, OverrideCandidates } from "../domain/deps.js";
import { CreditSpender } from "../domain/keys/credits.js";
import { UsageRecorder } from "../domain/keys/usage.js";
import { rawRowsInserted, writeAnalytics } from "../storage/analytics.js";
import type { ApiRow } from "../storage/apis.js";
import { analyticsPoolOf } from "../storage/db.js";
import { touchKeys } from "../storage/keys.js";
import { type Limiter, MemoryLimiter } from "../storage/memory-limiter.js";
import type { NamespaceRow } from "../storage/ratelimit.js";
import { RedisLimiter } from "../storage/redis-limiter.js";
import { type RootKeyRecord, touchRootKeys } from "../storage/root-keys.js";
import type { Pool } from "../storage/sql.js";
import { observeStatements } from "../storage/sql.js";
import { sweepVerificationUsage } from "../storage/usage.js";
import { DatabaseVault } from "../storage/vault.js";
import { metricsOf } from "../transport/metrics.js";
import type { Config } from "./config.js";
import { loadKeyring } from "./encryption-key.js";

export interface Runtime {
  deps: Deps;
  invalidations: Invalidations;
  /** Stops the background work and writes what is behind; with `until` (Unix ms), a write the database refuses is tried again until then. */
  close(until?: number): Promise<void>;
  /** Work recorded behind the requests and not yet in the database. */
  behind(): Behind;
  /** Names of the parts currently running degraded (e.g. ["redis"]); empty when all is well. */
  degraded: () => string[];
}

export interface Behind {
  analyticsEvents: number;
  /** Keys whose last-used time is waiting to be written. */
  lastUsedKeys: number;
  lastUsedRootKeys: number;
}

const USAGE_SWEEP_EVERY_MS = 15 * 60_000;

/** Users' analytics queries never run on the API's pool (its connections accept several statements a query). */
function readOnlyPool(pool: Pool): Pool {
  const p = analyticsPoolOf(pool);
  if (p === undefined) throw new Error("the database was not opened by openDatabase: no pool for analytics queries");
  return p;
}

/**
 * `analyticsPool`: the database analytics events go to and are read from
 * (ANALYTICS_DATABASE_URL's, see server/database.ts); the main one by default.
 */
export function buildDeps(config: Config, pool: Pool, log: Logger, clock: Clock = systemClock, analyticsPool: Pool = pool): Runtime {
  const cacheOpts = {
    maxEntries: config.cacheMaxEntries,
    maxBytes: config.cacheMaxBytes,
    ttlMs: config.cacheTtlMs,
    negativeTtlMs: 2_000,
  };
  // Group tags (CacheOptions.groups): those that every key of an API or a workspace
  // carries, every API of a workspace, every identifier of a namespace.
  const keyCache = new RecordCache<KeyRecord>({ ...cacheOpts, groups: ["api:", "ws:"], digestKeys: true }, keyRecordSize);
  const rootKeyCache = new RecordCache<RootKeyRecord>(
    { ...cacheOpts, maxEntries: 10_000, maxBytes: 64 * 1024 * 1024, groups: ["ws:"], digestKeys: true },
    (r) => 200 + r.permissions.join().length,
  );
  const apiCache = new RecordCache<ApiRow>({ ...cacheOpts, maxEntries: 100_000, maxBytes: 64 * 1024 * 1024, groups: ["ws:"] }, (a) => 300 + a.name.length);
  const namespaceCache = new RecordCache<NamespaceRow>({ ...cacheOpts, maxEntries: 100_000, maxBytes: 64 * 1024 * 1024 }, (n) => 200 + n.name.length);
  const overrideCache = new RecordCache<OverrideCandidates>(
    { ...cacheOpts, maxEntries: 100_000, maxBytes: 64 * 1024 * 1024, groups: ["ns:"] },
    (o) => 64 + o.rows.reduce((n, r) => n + 120 + r.identifier.length, 0) + (o.kept === undefined ? 0 : 100 + o.kept.counter.length),
  );
  const evict = (kind: InvalidationKind, id: string) => {
    switch (kind) {
      case "namespace":
        namespaceCache.deleteTag(`ns:${id}`);
        overrideCache.deleteTag(`ns:${id}`);
        break;
      case "rootkey":
        rootKeyCache.delete(id);
        rootKeyCache.deleteTag(`rootkey:${id}`);
        break;
      case "workspace":
        rootKeyCache.deleteTag(`ws:${id}`);
        keyCache.deleteTag(`ws:${id}`);
        apiCache.deleteTag(`ws:${id}`);
        break;
      case "api":
        keyCache.deleteTag(`api:${id}`);
        apiCache.deleteTag(`api:${id}`);
        break;
      case "key":
        // A key's own tag is its id (keyTags, domain/keys/lookup.ts).
        keyCache.deleteTag(id);
        break;
      default:
        keyCache.deleteTag(`${kind}:${id}`);
    }
  };
  const caches = () => [keyCache, rootKeyCache, apiCache, namespaceCache, overrideCache];
  const invalidations = new Invalidations(pool, evict, log, (stale) => {
    for (const c of caches()) {
      c.bypass = stale;
      if (!stale) c.clear();
    }
  });
  const usage = new UsageRecorder(
    (batch) => touchKeys(pool, batch),
    (err) => log.warn({ err }, "could not record key usage"),
  );
  usage.start();
  const rootKeyUsage = new UsageRecorder(
    (batch) => touchRootKeys(pool, batch),
    (err) => log.warn({ err }, "could not record root key usage"),
  );
  rootKeyUsage.start();
  let toldInserts = false;
  const analytics = new AnalyticsRecorder(
    async (verifications, ratelimits) => {
      await writeAnalytics(analyticsPool, verifications, ratelimits);
      if (!toldInserts && rawRowsInserted(analyticsPool)) {
        toldInserts = true;
        log.info("the database refuses LOAD DATA LOCAL: raw analytics rows go as INSERTs, at more of its CPU (MySQL: set local_infile=ON to allow it)");
      }
    },
    (err, pending) => log.warn({ err, pending }, "could not write analytics events; they are kept for the next try"),
    { onDrop: (dropped) => log.warn({ dropped }, "analytics events dropped: too many waiting for the database") },
  );
  analytics.start();
  let sweepingAnalytics = false;
  // Old counts are deleted now and then, by every instance (a sweep with nothing to do is one cheap statement).
  const sweepUsage = setInterval(() => {
    const before = clock.now() - config.usageRetentionDays * 86_400_000;
    sweepVerificationUsage(pool, before).catch((err: unknown) => log.warn({ err }, "could not delete old verification counts"));
    // One sweep at a time: a backlog may take longer than the interval.
    if (!sweepingAnalytics) {
      sweepingAnalytics = true;
      sweepRawAnalytics(analyticsPool, clock.now() - config.analyticsRawRetentionDays * 86_400_000, log)
        .catch((err: unknown) => log.warn({ err }, "could not delete old analytics events"))
        .finally(() => {
          sweepingAnalytics = false;
        });
    }
  }, USAGE_SWEEP_EVERY_MS);
  sweepUsage.unref();
  let sweepingAudit = false;
  const auditSweep = () => {
    if (sweepingAudit) return;
    sweepingAudit = true;
    sweepAuditLog(pool, clock.now() - config.auditRetentionDays * 86_400_000, log)
      .catch((err: unknown) => log.warn({ err }, "could not delete old audit records"))
      .finally(() => {
        sweepingAudit = false;
      });
  };
  const sweepAudit = setInterval(auditSweep, USAGE_SWEEP_EVERY_MS);
  sweepAudit.unref();
  // And once a minute after start, so a restarted instance does not wait 15 minutes for its first sweep.
  const firstAuditSweep = setTimeout(auditSweep, 60_000);
  firstAuditSweep.unref();
  // With REDIS_URL every rate-limit counter is shared by all instances; without it, counters are per instance.
  const limiter: Limiter =
    config.redisUrl !== undefined
      ? new RedisLimiter({ url: config.redisUrl, log, whenDown: config.ratelimitWhenRedisDown, commandTimeoutMs: config.redisCommandTimeoutMs })
      : new MemoryLimiter();
  const degraded = (): string[] => [...(limiter.degraded?.() === true ? ["redis"] : []), ...(invalidations.stale ? ["invalidation-log"] : [])];
  const deps: Deps = {
    pool,
    clock,
    log,
    keyCache,
    rootKeyCache,
    apiCache,
    namespaceCache,
    overrideCache,
    limiter,
    usage,
    rootKeyUsage,
    analytics,
    region: config.region,
    analyticsPool,
    analyticsQueries: { pool: readOnlyPool(analyticsPool), timeoutMs: config.analyticsQueryTimeoutMs, maxRows: config.analyticsMaxRows },
    credits: new CreditSpender(pool),
    vault: new DatabaseVault(pool, loadKeyring(config, log), log),
    invalidate: (kind, id) => invalidations.publish(kind, id),
    idempotencyTtlMs: config.idempotencyTtlMs,
    degraded,
  };
  const metrics = metricsOf(deps);
  metrics.watch(deps, pool, config.redisUrl !== undefined);
  metrics.watchAnalytics(analytics);
  const unobserve = observeStatements((seconds, ok) => metrics.statement(seconds, ok));
  return {
    deps,
    invalidations,
    async close(until?: number) {
      invalidations.stop();
      clearInterval(sweepUsage);
      clearInterval(sweepAudit);
      clearTimeout(firstAuditSweep);
      // Last-used times first: one or two statements, where analytics may be many batches.
      await Promise.all([usage.stop(until), rootKeyUsage.stop(until)]);
      await analytics.stop(until);
      await limiter.close();
      unobserve();
    },
    behind: () => ({ analyticsEvents: analytics.unwritten, lastUsedKeys: usage.size, lastUsedRootKeys: rootKeyUsage.size }),
    degraded,
  };
}
