// Configuration comes from the environment, validated once at start. Every bad
// value gets its own clear message; all of them are reported together.

import { isIP } from "node:net";
import { parseDatabaseUrl } from "../storage/db.js";
import { parseRedisUrl } from "../storage/redis-url.js";
export interface Config {
  databaseUrl: string | undefined;
  /** Where analytics events are written and queried (ANALYTICS_DATABASE_URL); undefined = the main database. */
  analyticsDatabaseUrl: string | undefined;
  host: string;
  port: number;
  grpcPort: number;
  docsBaseUrl: string;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** KEYHOLD_ENV=production, or NODE_ENV=production when KEYHOLD_ENV is unset: no silent defaults for secrets. */
  production: boolean;
  /** Base64 of 32 bytes: the current key-encryption key for recoverable keys. Undefined (never in production) = keep one under .keyhold/. */
  encryptionKey: string | undefined;
  /** Retired key-encryption keys (base64) that may still unwrap data keys until `keyhold encryption-key rotate` has run. */
  previousEncryptionKeys: string[];
  cacheMaxEntries: number;
  cacheMaxBytes: number;
  cacheTtlMs: number;
  /** How long a response stored for an Idempotency-Key is replayed to retries. */
  idempotencyTtlMs: number;
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  /** Added to shutdownTimeoutMs: what the requests leave of the sum is how long SIGTERM waits for the work written behind (analytics events, last-used times). */
  shutdownFlushTimeoutMs: number;
  /** Longest a client may take to send a request's headers (slow clients are cut off with a 408). */
  headersTimeoutMs: number;
  /** Longest a client may take to send a whole request, body included. */
  requestTimeoutMs: number;
  /** Longest opening a database connection may take. */
  dbConnectTimeoutMs: number;
  /** Longest the database may stay silent on a statement before its connection is dropped (and the request answered 503). */
  dbQueryTimeoutMs: number;
  /** Where the shared rate-limit counters live: one Redis, a Redis Cluster or Sentinel (src/storage/redis-client.ts). Undefined = in-memory counters. */
  redisUrl: string | undefined;
  /** Longest a rate-limit call to Redis may take before it is answered from the fallback (RATELIMIT_WHEN_REDIS_DOWN). */
  redisCommandTimeoutMs: number;
  /** How rate limits are answered while Redis is unreachable. */
  ratelimitWhenRedisDown: "local" | "open" | "closed";
  /** How long verification counts (the usage charts) are kept. */
  usageRetentionDays: number;
  /** How long audit records are kept (AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
  /** How long raw analytics events are kept (ANALYTICS_RAW_RETENTION_DAYS); the roll-ups stay. */
  analyticsRawRetentionDays: number;
  /** Longest an analytics query may run (ANALYTICS_QUERY_TIMEOUT_MS); longer answers 422. */
  analyticsQueryTimeoutMs: number;
  /** Most rows an analytics query may return (ANALYTICS_MAX_ROWS); more answers 422. */
  analyticsMaxRows: number;
  /** The `region` recorded with every verification (KEYHOLD_REGION). */
  region: string;
  /** Dashboard sessions end after this long unused… */
  dashboardSessionIdleMs: number;
  /** …or this long after sign-in. */
  dashboardSessionMaxMs: number;
  /** The session cookie's Secure attribute: "auto" = when the request came over https. */
  dashboardCookieSecure: "auto" | "always" | "never";
  /** Sign-in attempts allowed per email, and per client address, in each window. */
  dashboardSignInPerEmail: number;
  dashboardSignInPerIp: number;
  dashboardSignInWindowMs: number;
  /** Fastify's trustProxy: whose X-Forwarded-For/-Proto to believe (false = nobody's). */
  trustProxy: boolean | number | string[];
  /** gRPC server reflection (grpc.reflection.v1 and v1alpha) on GRPC_PORT. */
  grpcReflection: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    // One problem (the usual case) reads as one line; several are listed.
    super(problems.length === 1 ? `invalid configuration: ${problems[0]}` : `invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const WHEN_REDIS_DOWN = ["local", "open", "closed"] as const;

/** Canonical base64 of exactly 32 bytes, as `keyhold encryption-key generate` and `openssl rand -base64 32` print. */
export function isEncryptionKey(value: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, "base64").toString("base64") === value;
}

const GENERATE_HINT = "generate one with `npx keyhold encryption-key generate` (or `openssl rand -base64 32`)";

/**
 * `needsEncryptionKey: false` is for CLI commands that never touch recoverable
 * keys: they run in production without KEYHOLD_ENCRYPTION_KEY.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: { needsEncryptionKey?: boolean } = {}): Config {
  const problems: string[] = [];

  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return def;
    if (!/^\d+$/.test(raw.trim())) {
      problems.push(`${name}=${JSON.stringify(raw)} is not a whole number (expected ${min}-${max})`);
      return def;
    }
    const n = Number(raw.trim());
    if (n < min || n > max) problems.push(`${name}=${raw} is out of range (expected ${min}-${max})`);
    return n;
  };

  let databaseUrl = env.DATABASE_URL;
  if (databaseUrl === "") databaseUrl = undefined;
  if (databaseUrl !== undefined) {
    // One host, or the nodes of a cluster separated by commas (storage/db.ts, parseDatabaseUrl).
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(databaseUrl)?.[1]?.toLowerCase();
    if (scheme !== undefined && scheme !== "mysql" && scheme !== "mariadb") {
      problems.push(`DATABASE_URL must start with mysql:// (got ${scheme}://)`);
    } else {
      try {
        parseDatabaseUrl(databaseUrl);
      } catch {
        problems.push("DATABASE_URL is not a URL (expected mysql://user:password@host:3306/database, or host1:3306,host2:3306 for a cluster's nodes)");
      }
    }
  }

  let analyticsDatabaseUrl = env.ANALYTICS_DATABASE_URL;
  if (analyticsDatabaseUrl === "") analyticsDatabaseUrl = undefined;
  if (analyticsDatabaseUrl !== undefined) {
    try {
      if (!/^(mysql|mariadb):\/\//i.test(analyticsDatabaseUrl)) throw new Error("scheme");
      parseDatabaseUrl(analyticsDatabaseUrl);
    } catch {
      problems.push("ANALYTICS_DATABASE_URL is not a mysql:// URL (expected mysql://user:password@host:3306/database)");
    }
  }

  const docsBaseUrl = (env.DOCS_BASE_URL ?? "https://keyhold.dev/docs").replace(/\/+$/, "");
  try {
    const u = new URL(docsBaseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") problems.push("DOCS_BASE_URL must be an http(s) URL");
  } catch {
    problems.push(`DOCS_BASE_URL=${JSON.stringify(env.DOCS_BASE_URL)} is not an absolute URL`);
  }

  const logLevel = (env.LOG_LEVEL ?? "info").toLowerCase();
  if (!(LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL=${JSON.stringify(env.LOG_LEVEL)} is not one of ${LEVELS.join(", ")}`);
  }

  const keyholdEnv = env.KEYHOLD_ENV === undefined || env.KEYHOLD_ENV === "" ? undefined : env.KEYHOLD_ENV.trim().toLowerCase();
  if (keyholdEnv !== undefined && keyholdEnv !== "production" && keyholdEnv !== "development") {
    problems.push(`KEYHOLD_ENV=${JSON.stringify(env.KEYHOLD_ENV)} is not one of production, development`);
  }
  const production = keyholdEnv === undefined ? env.NODE_ENV === "production" : keyholdEnv === "production";

  // The keys themselves are never echoed in a message.
  const encryptionKey = env.KEYHOLD_ENCRYPTION_KEY === undefined || env.KEYHOLD_ENCRYPTION_KEY.trim() === "" ? undefined : env.KEYHOLD_ENCRYPTION_KEY.trim();
  if (encryptionKey !== undefined && !isEncryptionKey(encryptionKey)) {
    problems.push(`KEYHOLD_ENCRYPTION_KEY must be the base64 of exactly 32 bytes: ${GENERATE_HINT}`);
  } else if (encryptionKey === undefined && production && opts.needsEncryptionKey !== false) {
    const why = keyholdEnv === undefined ? "NODE_ENV=production" : "KEYHOLD_ENV=production";
    problems.push(`KEYHOLD_ENCRYPTION_KEY is required in production (${why}): ${GENERATE_HINT}, set it on every instance and back it up`);
  }
  const previousEncryptionKeys = (env.KEYHOLD_PREVIOUS_ENCRYPTION_KEYS ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  previousEncryptionKeys.forEach((k, i) => {
    if (!isEncryptionKey(k)) problems.push(`KEYHOLD_PREVIOUS_ENCRYPTION_KEYS entry ${i + 1} must be the base64 of exactly 32 bytes (comma-separated list)`);
  });

  const redisUrl = env.REDIS_URL === "" ? undefined : env.REDIS_URL;
  if (redisUrl !== undefined) {
    try {
      parseRedisUrl(redisUrl);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }

  const whenDown = (env.RATELIMIT_WHEN_REDIS_DOWN === undefined || env.RATELIMIT_WHEN_REDIS_DOWN === "" ? "local" : env.RATELIMIT_WHEN_REDIS_DOWN)
    .trim()
    .toLowerCase();
  if (!(WHEN_REDIS_DOWN as readonly string[]).includes(whenDown)) {
    problems.push(`RATELIMIT_WHEN_REDIS_DOWN=${JSON.stringify(env.RATELIMIT_WHEN_REDIS_DOWN)} is not one of ${WHEN_REDIS_DOWN.join(", ")}`);
  }

  const cookieSecure = (env.DASHBOARD_COOKIE_SECURE ?? "auto").trim().toLowerCase() || "auto";
  const COOKIE_SECURE: Record<string, Config["dashboardCookieSecure"]> = { auto: "auto", true: "always", always: "always", false: "never", never: "never" };
  if (COOKIE_SECURE[cookieSecure] === undefined) {
    problems.push(`DASHBOARD_COOKIE_SECURE=${JSON.stringify(env.DASHBOARD_COOKIE_SECURE)} is not one of auto, true, false`);
  }

  const reflection = (env.GRPC_REFLECTION ?? "").trim().toLowerCase();
  if (!["", "true", "false"].includes(reflection)) problems.push(`GRPC_REFLECTION=${JSON.stringify(env.GRPC_REFLECTION)} is not true or false`);

  const trustProxy = parseTrustProxy(env.TRUST_PROXY);
  if (trustProxy === undefined)
    problems.push(`TRUST_PROXY=${JSON.stringify(env.TRUST_PROXY)} is not true, false, a hop count, or a comma-separated list of IPs/CIDRs`);

  const config: Config = {
    databaseUrl,
    analyticsDatabaseUrl,
    trustProxy: trustProxy ?? false,
    grpcReflection: reflection !== "false",
    host: env.HOST && env.HOST !== "" ? env.HOST : "0.0.0.0",
    port: int("PORT", 7070, 0, 65535),
    grpcPort: int("GRPC_PORT", 7071, 0, 65535),
    docsBaseUrl,
    logLevel: logLevel as Config["logLevel"],
    production,
    encryptionKey,
    previousEncryptionKeys,
    cacheMaxEntries: int("CACHE_MAX_ENTRIES", 100_000, 1, 100_000_000),
    cacheMaxBytes: int("CACHE_MAX_BYTES", 256 * 1024 * 1024, 1024, 64 * 1024 ** 3),
    cacheTtlMs: int("CACHE_TTL_MS", 60_000, 0, 86_400_000),
    idempotencyTtlMs: int("IDEMPOTENCY_TTL_MS", 86_400_000, 1_000, 7 * 86_400_000),
    bodyLimitBytes: int("BODY_LIMIT_BYTES", 10 * 1024 * 1024, 1024, 1024 ** 3),
    shutdownTimeoutMs: int("SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    shutdownFlushTimeoutMs: int("SHUTDOWN_FLUSH_TIMEOUT_MS", 15_000, 0, 600_000),
    headersTimeoutMs: int("HEADERS_TIMEOUT_MS", 10_000, 100, 600_000),
    requestTimeoutMs: int("REQUEST_TIMEOUT_MS", 30_000, 100, 3_600_000),
    dbConnectTimeoutMs: int("DB_CONNECT_TIMEOUT_MS", 5_000, 100, 600_000),
    dbQueryTimeoutMs: int("DB_QUERY_TIMEOUT_MS", 15_000, 100, 3_600_000),
    redisCommandTimeoutMs: int("REDIS_COMMAND_TIMEOUT_MS", 200, 10, 60_000),
    redisUrl,
    ratelimitWhenRedisDown: whenDown as Config["ratelimitWhenRedisDown"],
    usageRetentionDays: int("USAGE_RETENTION_DAYS", 90, 1, 3_650),
    auditRetentionDays: int("AUDIT_RETENTION_DAYS", 365, 1, 36_500),
    analyticsRawRetentionDays: int("ANALYTICS_RAW_RETENTION_DAYS", 30, 1, 3_650),
    analyticsQueryTimeoutMs: int("ANALYTICS_QUERY_TIMEOUT_MS", 10_000, 100, 600_000),
    analyticsMaxRows: int("ANALYTICS_MAX_ROWS", 10_000, 1, 1_000_000),
    region: (env.KEYHOLD_REGION ?? "").trim().slice(0, 64) || "local",
    dashboardSessionIdleMs: int("DASHBOARD_SESSION_IDLE_MS", 12 * 3_600_000, 60_000, 30 * 86_400_000),
    dashboardSessionMaxMs: int("DASHBOARD_SESSION_MAX_MS", 7 * 86_400_000, 60_000, 90 * 86_400_000),
    dashboardCookieSecure: COOKIE_SECURE[cookieSecure] ?? "auto",
    dashboardSignInPerEmail: int("DASHBOARD_SIGNIN_PER_EMAIL", 10, 1, 1_000_000),
    dashboardSignInPerIp: int("DASHBOARD_SIGNIN_PER_IP", 50, 1, 1_000_000),
    dashboardSignInWindowMs: int("DASHBOARD_SIGNIN_WINDOW_MS", 15 * 60_000, 1_000, 86_400_000),
  };
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`);
  }
  if (config.port !== 0 && config.port === config.grpcPort) problems.push(`PORT and GRPC_PORT must differ (both ${config.port})`);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** TRUST_PROXY: unset or false, true, a hop count, or addresses/CIDRs; undefined when it is none of them. */
function parseTrustProxy(raw: string | undefined): Config["trustProxy"] | undefined {
  const v = (raw ?? "").trim().toLowerCase();
  if (v === "" || v === "false") return false;
  if (v === "true") return true;
  if (/^\d{1,3}$/.test(v)) return Number(v);
  const valid = (p: string) => {
    const [ip, bits, extra] = p.split("/");
    const family = isIP(ip ?? "");
    if (family === 0 || extra !== undefined) return false;
    return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  };
  const list = v.split(",").map((p) => p.trim());
  return list.every(valid) ? list : undefined;
}
