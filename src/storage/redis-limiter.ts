// Rate-limit counters shared by every keyhold instance through Redis
// (docs/ratelimits.md, "Where the counters live"). The check() calls made in
// one event-loop turn (one per concurrent request) go to Redis as one Lua script
// call, each call a group within it: for
// each group in turn, the script reads each check's current and previous window
// counters, evaluates them with the same arithmetic as MemoryLimiter, and only
// when every check of the group passes INCRBYs its current counters
// (all-or-nothing per group, and the whole script atomic in Redis, so the
// groups are counted exactly as separate calls in that order would be). One
// script call per turn instead of one per request took ~40% of the keyhold CPU
// a rate-limited verification spent on Redis (bench/README.md). Window numbers come from the `now` passed in (the service clock), not
// from Redis TIME. Counter keys expire by themselves (PEXPIRE 2×duration + margin).
//
// When Redis is unreachable or a command fails or times out, answers come from
// the fallback chosen by `whenDown`: a local MemoryLimiter ("local"), allow
// everything ("open") or deny everything ("closed"). ioredis reconnects by
// itself and shared counting resumes with no restart.

import { Redis } from "ioredis";
import type { Logger } from "../core/logger.js";
import { type LimitCheck, type Limiter, type LimitResult, MemoryLimiter } from "./memory-limiter.js";

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

// KEYS: per check i (all groups' checks in order), [2i-1] = current window
// counter, [2i] = previous window counter.
// ARGV: [1] = number of groups G, [2..G+1] = checks in each group, then per check
// i five values from index G+1+5(i-1)+1: limit, cost, ms since window start,
// duration, ttl ms.
// Returns the effective count of every check (cur + pending + trunc(prev × (1 − elapsed)) + cost).
const SCRIPT = `
local groups = tonumber(ARGV[1])
local eff = {}
local first = 1
for g = 1, groups do
  local last = first + tonumber(ARGV[1 + g]) - 1
  local pending = {}
  local all = true
  for i = first, last do
    local cur = KEYS[2 * i - 1]
    local a = 1 + groups + (i - 1) * 5
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
    for i = first, last do
      local a = 1 + groups + (i - 1) * 5
      if tonumber(ARGV[a + 2]) > 0 then
        redis.call("INCRBY", KEYS[2 * i - 1], ARGV[a + 2])
        redis.call("PEXPIRE", KEYS[2 * i - 1], ARGV[a + 5])
      end
    end
  end
  first = last + 1
end
return eff
`;

/** Groups sent in one script call at most (a turn with more makes several calls). */
const MAX_GROUPS = 256;

/** One check() call waiting for the turn's script call. */
interface Group {
  keys: string[];
  args: (string | number)[];
  size: number;
  resolve: (effective: number[]) => void;
  reject: (err: unknown) => void;
}

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
  /** check() calls of this turn, sent together when it ends. */
  private queue: Group[] = [];

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
      effective = await new Promise<number[]>((resolve, reject) => {
        this.queue.push({ keys, args, size: checks.length, resolve, reject });
        if (this.queue.length === 1) setImmediate(() => void this.flush());
      });
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

  /** Sends the turn's groups: one script call per MAX_GROUPS of them. */
  private flush(): Promise<void>[] {
    const queued = this.queue;
    this.queue = [];
    const sent: Promise<void>[] = [];
    for (let i = 0; i < queued.length; i += MAX_GROUPS) sent.push(this.send(queued.slice(i, i + MAX_GROUPS)));
    return sent;
  }

  private async send(groups: Group[]): Promise<void> {
    const keys: string[] = [];
    const sizes: number[] = [];
    const args: (string | number)[] = [];
    for (const g of groups) {
      keys.push(...g.keys);
      sizes.push(g.size);
      args.push(...g.args);
    }
    try {
      const effective = await (this.redis as unknown as LimitCommand).khRateLimit(keys.length, ...keys, groups.length, ...sizes, ...args);
      let at = 0;
      for (const g of groups) {
        g.resolve(effective.slice(at, at + g.size));
        at += g.size;
      }
    } catch (err) {
      for (const g of groups) g.reject(err);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    // Checks of this turn go out before the connection is closed (their scheduled flush finds nothing left).
    await Promise.all(this.flush());
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
