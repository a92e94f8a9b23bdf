import type { InvalidationKind } from "../cache/invalidation.js";
import type { RecordCache } from "../cache/verification-cache.js";
import type { Logger } from "../core/logger.js";
import type { KeyRecord } from "../core/records.js";
import type { ApiRow } from "../storage/apis.js";
import type { Limiter } from "../storage/memory-limiter.js";
import type { NamespaceRow, OverrideRow } from "../storage/ratelimit.js";
import type { RootKeyRecord } from "../storage/root-keys.js";
import type { Pool } from "../storage/sql.js";
import type { Vault } from "../storage/vault.js";
import type { AnalyticsLimits } from "./analytics/limits.js";
import type { AnalyticsRecorder } from "./analytics/recorder.js";
import type { Clock } from "./clock.js";
import type { CreditSpender } from "./keys/credits.js";
import type { UsageRecorder } from "./keys/usage.js";

/**
 * An identifier's override candidates as cached, with the limiter's key and
 * counter for its check as the read made them (kept, so that a hot
 * identifier's counter is not joined, flattened and hashed anew each request;
 * used while the check's window length is the same).
 */
export interface OverrideCandidates {
  rows: OverrideRow[];
  kept: { duration: number; key: string; counter: string } | undefined;
}

/** Everything the operations need, built once at start (src/server/deps.ts). */
export interface Deps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  keyCache: RecordCache<KeyRecord>;
  rootKeyCache: RecordCache<RootKeyRecord>;
  /** Namespaces by `${workspaceId}|${name or id}`; tagged `ns:<id>`. */
  namespaceCache: RecordCache<NamespaceRow>;
  /**
   * Live APIs by `${workspaceId}|${apiId}`, for creating keys; tagged `api:<id>`
   * and `ws:<workspaceId>`. Found APIs only: a new API is seen at once everywhere.
   */
  apiCache: RecordCache<ApiRow>;
  /** Override candidates by `${namespaceId}|${identifier}`; tagged `ns:<id>`. */
  overrideCache: RecordCache<OverrideCandidates>;
  limiter: Limiter;
  usage: UsageRecorder;
  /** Root keys' last-used times, written behind like keys'. */
  rootKeyUsage: UsageRecorder;
  /** Verification and rate-limit events for the analytics API and the usage charts (written behind). */
  analytics: AnalyticsRecorder;
  /** Recorded with every verification (KEYHOLD_REGION). */
  region: string;
  /** Where analytics events are written and the usage charts read (the main pool unless ANALYTICS_DATABASE_URL). */
  analyticsPool: Pool;
  /** Where users' analytics queries run, and their limits. */
  analyticsQueries: AnalyticsLimits;
  credits: CreditSpender;
  vault: Vault;
  /** Evicts cached records here at once and tells other instances. */
  invalidate(kind: InvalidationKind, id: string): Promise<void>;
  /** How long a response stored for an Idempotency-Key is replayed. */
  idempotencyTtlMs: number;
  /** Names of the parts running degraded (["redis"], ["invalidation-log"]); empty when all is well. */
  degraded(): string[];
}
