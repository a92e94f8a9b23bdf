// Rate-limit counters shared by every keyhold instance through Redis (CONTRACT
// §7.1–7.2). One Lua script per check() call — one round trip whatever the
// number of checks — reads each check's current and previous window counters,
// evaluates them all with the same arithmetic as MemoryLimiter, and only when
// every check passes INCRBYs the current counters (all-or-nothing, atomic in
// Redis). Window numbers come from the `now` passed in (the service clock), not
// from Redis TIME. Counter keys expire by themselves (PEXPIRE 2×duration + margin).
//
// When Redis is unreachable or a command fails or times out, answers come from
// the fallback chosen by `whenDown`: a local MemoryLimiter ("local"), allow
// everything ("open") or deny everything ("closed"). ioredis reconnects by
// itself and shared counting resumes with no restart.

import { Redis } from "ioredis";
import type { Logger } from "../domain/deps.js";
import { MemoryLimiter, type LimitCheck, type Limiter, type LimitResult } from "../domain/ratelimit/limiter.js";

export type WhenRedisDown = "local" | "open" | "closed";

export interface RedisLimiterOptions {
  /** redis:// or rediss:// URL. */
  url: string;
  log: Logger;
  /** What to answer while Redis cannot be used. Default "local". */
  whenDown?: WhenRedisDown;
  /** Prepended to every counter key. Default "kh:rl:". */
  keyPrefix?: string;
  /** Per-command timeout. Default 200 ms. */
  commandTimeoutMs?: number;
  /** Upper bound of the delay between reconnection attempts. Default 1000 ms. */
  maxReconnectDelayMs?: number;
  /** Kept beyond the window pair so instances with slightly different clocks agree. Default 60 s. */
  expiryMarginMs?: number;
}

// KEYS: per check i, [2i-1] = current window counter, [2i] = previous window counter.
// ARGV: per check i, five values: limit, cost, ms since window start, duration, ttl ms.
// Returns the effective count of every check (cur + pending + trunc(prev × (1 − elapsed)) + cost).
const SCRIPT = `
local n = #KEYS / 2
local eff = {}
local pending = {}
local all = true
for i = 1, n do
  local cur = KEYS[2 * i - 1]
  local a = (i - 1) * 5
  local limit = tonumber(ARGV[a + 1])
  local cost = tonumber(ARGV[a + 2])
  local off = tonumber(ARGV[a + 3])
  local dur = tonumber(ARGV[a + 4])
  local c = tonumber(redis.call("GET", cur) or "0")
  local p = tonumber(redis.call("GET", KEYS[2 * i]) or "0")
  local before = pending[cur] or 0
  pending[cur] = before + cost
  local e = c + before + math.floor(p * (1 - off / dur)) + cost
  eff[i] = e
  if limit <= 0 or e > limit then all = false end
end
if all then
  for i = 1, n do
    local a = (i - 1) * 5
    if tonumber(ARGV[a + 2]) > 0 then
      redis.call("INCRBY", KEYS[2 * i - 1], ARGV[a + 2])
      redis.call("PEXPIRE", KEYS[2 * i - 1], ARGV[a + 5])
    end
  end
end
return eff
`;

interface LimitCommand {
  khRateLimit(...args: (string | number)[]): Promise<number[]>;
}

export class RedisLimiter implements Limiter {
  readonly redis: Redis;
  private readonly local = new MemoryLimiter();
  private readonly log: Logger;
  private readonly whenDown: WhenRedisDown;
  private readonly prefix: string;
  private readonly marginMs: number;
  private down = false;
  private closing = false;

  constructor(opts: RedisLimiterOptions) {
    this.log = opts.log;
    this.whenDown = opts.whenDown ?? "local";
    this.prefix = opts.keyPrefix ?? "kh:rl:";
    this.marginMs = opts.expiryMarginMs ?? 60_000;
    const maxDelay = opts.maxReconnectDelayMs ?? 1_000;
    this.redis = new Redis(opts.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 200,
      connectTimeout: 2_000,
      lazyConnect: false,
      // Checks issued in the same event-loop turn (one per concurrent request) go
      // to Redis in one write: far fewer syscalls under load, same one round trip each.
      enableAutoPipelining: true,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times - 1, 10), maxDelay),
    });
    this.redis.defineCommand("khRateLimit", { lua: SCRIPT });
    this.redis.on("error", (err: Error) => this.markDown(err));
    this.redis.on("close", () => this.markDown(new Error("connection to Redis closed")));
    this.redis.on("ready", () => this.markUp());
  }

  /** True while answers come from the fallback rather than shared Redis counters. */
  degraded(): boolean {
    return this.down;
  }

  async check(checks: readonly LimitCheck[], now: number): Promise<LimitResult[]> {
    if (checks.length === 0) return [];
    if (this.redis.status !== "ready") {
      this.markDown(new Error(`Redis is not connected (${this.redis.status})`));
      return this.fallback(checks, now);
    }
    const keys: string[] = [];
    const args: (string | number)[] = [];
    const seqs: number[] = [];
    for (const c of checks) {
      const seq = Math.floor(now / c.duration);
      seqs.push(seq);
      keys.push(this.counterKey(c, seq), this.counterKey(c, seq - 1));
      args.push(c.limit, c.cost, now - seq * c.duration, c.duration, 2 * c.duration + this.marginMs);
    }
    let effective: number[];
    try {
      effective = await (this.redis as unknown as LimitCommand).khRateLimit(keys.length, ...keys, ...args);
    } catch (err) {
      this.markDown(err as Error);
      return this.fallback(checks, now);
    }
    this.markUp();
    const passed = checks.map((c, i) => c.limit > 0 && Number(effective[i]) <= c.limit);
    const all = passed.every(Boolean);
    return checks.map((c, i) => ({
      passed: passed[i] === true,
      limit: c.limit,
      // A passed check refunded because another failed reports its cost given back.
      remaining: passed[i] ? Math.max(0, c.limit - Number(effective[i]) + (all ? 0 : c.cost)) : 0,
      reset: ((seqs[i] ?? 0) + 1) * c.duration,
    }));
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.local.close();
    if (this.redis.status === "ready") {
      try {
        await this.redis.quit();
        return;
      } catch {
        // fall through to a hard disconnect
      }
    }
    this.redis.disconnect();
  }

  private counterKey(c: LimitCheck, seq: number): string {
    return `${this.prefix}{${c.key}}:${c.duration}:${seq}`;
  }

  private fallback(checks: readonly LimitCheck[], now: number): LimitResult[] {
    if (this.whenDown === "local") return this.local.checkSync(checks, now);
    const open = this.whenDown === "open";
    return checks.map((c) => {
      const seq = Math.floor(now / c.duration);
      return {
        passed: open,
        limit: c.limit,
        remaining: open ? Math.max(0, c.limit - c.cost) : 0,
        reset: (seq + 1) * c.duration,
      };
    });
  }

  private markDown(err: Error): void {
    if (this.down || this.closing) return;
    this.down = true;
    this.log.warn(
      { err: { message: err.message }, fallback: this.whenDown },
      `Redis is unavailable: rate limits are answered ${this.whenDown === "local" ? "from local counters" : this.whenDown === "open" ? "by allowing everything" : "by denying everything"} until it is back`,
    );
  }

  private markUp(): void {
    if (!this.down || this.closing) return;
    this.down = false;
    this.log.info({}, "Redis is back: rate-limit counters are shared again");
  }
}
