// The ioredis client for each shape of Redis that REDIS_URL names (parsed in
// redis-url.ts; README, "Running in production").

import { Cluster, Redis } from "ioredis";
import type { RedisTarget } from "./redis-url.js";

export { parseRedisUrl, type RedisNode, type RedisTarget } from "./redis-url.js";

/** What every shape shares: fail fast rather than queue, and reconnect by itself. */
export interface RedisConnectOptions {
  commandTimeoutMs: number;
  maxReconnectDelayMs: number;
}

/** A client for the target. A Cluster routes each command to its slot's master and follows MOVED and ASK. */
export function connectRedis(target: RedisTarget, opts: RedisConnectOptions): Redis | Cluster {
  const retry = (times: number) => Math.min(50 * 2 ** Math.min(times - 1, 10), opts.maxReconnectDelayMs);
  const common = {
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs,
    connectTimeout: 2_000,
    // Commands issued in the same event-loop turn go to Redis in one write.
    enableAutoPipelining: true,
    // Except the rate-limit script, which the limiter already sends once per turn
    // (once per slot on a cluster; src/storage/redis-limiter.ts): a pipeline of
    // its own around each call was 1.2-1.6 µs of keyhold's CPU a check, for one
    // command. And on a cluster ioredis files an auto-pipelined command under the
    // slot of its first argument, which for a script with a variable key count is
    // that count, not a key: two calls for two slots then share a pipeline and
    // fail ("All keys in the pipeline should belong to the same slots allocation group").
    autoPipeliningIgnoredCommands: ["khRateLimit"],
  };
  if (target.mode === "single") return new Redis(target.url, { ...common, enableOfflineQueue: false, retryStrategy: retry });
  if (target.mode === "sentinel") {
    return new Redis({
      ...common,
      enableOfflineQueue: false,
      sentinels: target.sentinels,
      name: target.name,
      db: target.db,
      username: target.username,
      password: target.password,
      sentinelPassword: target.sentinelPassword,
      ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
      retryStrategy: retry,
      sentinelRetryStrategy: retry,
      // Told by the sentinels when the master moves, rather than finding out from a failed command.
      failoverDetector: true,
    });
  }
  const { enableAutoPipelining, autoPipeliningIgnoredCommands, ...perNode } = common;
  return new Cluster(target.nodes, {
    enableOfflineQueue: false,
    enableAutoPipelining,
    autoPipeliningIgnoredCommands,
    clusterRetryStrategy: retry,
    // While a master fails over (cluster_state:fail for ~8 s measured on loopback)
    // commands fail at once and the caller's fallback answers: no queue builds up.
    retryDelayOnClusterDown: 100,
    retryDelayOnFailover: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 1_000,
    // ioredis refreshes its slot map on MOVED; read it every 2 s as well, so that a
    // promoted replica is found even for slots no command has tried since.
    slotsRefreshInterval: 2_000,
    redisOptions: { ...perNode, username: target.username, password: target.password, ...(target.tls ? { tls: {} } : {}) },
  });
}
