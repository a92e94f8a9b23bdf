// Sliding-window rate limiting approximated from two fixed windows aligned to
// the Unix epoch (docs/ratelimits.md, "The algorithm"):
//   effective = cur + trunc(prev × (1 − elapsed)) + cost
// denied when effective > limit (nothing consumed, remaining 0); otherwise cur += cost.
// A batch of checks is all-or-nothing (docs/ratelimits.md, "Batches are all or
// nothing"). This in-memory store is exact on one instance because Node runs each
// batch to completion without interleaving.

import { LRUCache } from "lru-cache";
import type { Answer } from "../core/answer.js";

export interface LimitCheck {
  /** Counter identity: workspace, scope (namespace or limit name) and identifier. */
  key: string;
  /**
   * Counters with the same tag live in one hash slot of a Redis Cluster, so that
   * checks made together are one atomic script call there (a key's limits carry
   * its identity's tag). Without a tag a counter is a slot of its own.
   */
  slotTag?: string | undefined;
  limit: number;
  duration: number;
  cost: number;
  /**
   * `counterOf(key, duration)` when the caller keeps its checks: the in-process
   * limiter's name for the counter, made here for each check otherwise (a new
   * string a check, flattened and hashed in full for its lookup).
   */
  counter?: string | undefined;
}

/** A counter's name in the in-process limiter: its identity and window length (a limit whose duration changes starts a new counter). */
export const counterOf = (key: string, duration: number): string => `${key}|${duration}`;

/**
 * A check's key and counter made to be kept (with a cached record): the
 * counter's name one flat string and the key a slice of it. A string joined
 * from parts is a tree of one node a part until a Map lookup flattens it (and
 * hashes it, in C++, each time it is new); kept flat, it is hashed once.
 */
export function keptCounter(key: string, duration: number): { key: string; counter: string } {
  const counter = flat(counterOf(key, duration));
  return { key: counter.slice(0, key.length), counter };
}

/** The same text as one flat string of its own (JSON's round trip is exact for every string, lone surrogates included). */
export const flat = (s: string): string => JSON.parse(JSON.stringify(s)) as string;

export interface LimitResult {
  passed: boolean;
  limit: number;
  remaining: number;
  /** Unix ms at which the current fixed window ends. */
  reset: number;
}

export interface Limiter {
  /** The results as a value when they are known at once (the in-process limiter), a promise when they wait (Redis). */
  check(checks: readonly LimitCheck[], now: number): Answer<LimitResult[]>;
  close(): Promise<void>;
  /** True while a shared limiter answers from its fallback (e.g. Redis unreachable). */
  degraded?(): boolean;
}

interface Window {
  seq: number;
  cur: number;
  prev: number;
  duration: number;
}

/**
 * Counters are bounded: beyond `maxWindows` the least recently used counter is
 * dropped (a flood of distinct identifiers cannot exhaust memory; what it costs
 * is that the coldest identifiers start again from zero).
 */
export class MemoryLimiter implements Limiter {
  private readonly windows: LRUCache<string, Window>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 30_000, maxWindows = 500_000) {
    this.windows = new LRUCache<string, Window>({ max: maxWindows });
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepEveryMs);
    this.sweeper.unref();
  }

  /** Answered at once: a caller awaiting a promise here spent a microtask turn on every check. */
  check(checks: readonly LimitCheck[], now: number): LimitResult[] {
    return this.checkSync(checks, now);
  }

  checkSync(checks: readonly LimitCheck[], now: number): LimitResult[] {
    if (checks.length === 1) return [this.checkOne(checks[0] as LimitCheck, now)];
    // The same counter named twice in one batch counts the earlier checks' cost too.
    const pending = new Map<Window, number>();
    const evaluated = checks.map((c) => {
      const seq = Math.floor(now / c.duration);
      const w = this.window(c.counter ?? counterOf(c.key, c.duration), seq, c.duration);
      const elapsed = (now - seq * c.duration) / c.duration;
      const before = pending.get(w) ?? 0;
      pending.set(w, before + c.cost);
      const effective = w.cur + before + Math.trunc(w.prev * (1 - elapsed)) + c.cost;
      const passed = c.limit > 0 && effective <= c.limit;
      return { c, w, effective, passed, reset: (seq + 1) * c.duration };
    });
    const all = evaluated.every((e) => e.passed);
    if (all) for (const e of evaluated) e.w.cur += e.c.cost;
    return evaluated.map((e) => ({
      passed: e.passed,
      limit: e.c.limit,
      // A passed check refunded because another failed reports its cost given back.
      remaining: !e.passed ? 0 : Math.max(0, e.c.limit - e.effective + (all ? 0 : e.c.cost)),
      reset: e.reset,
    }));
  }

  /**
   * One check, the batch rule's case of one (a verification with one limit,
   * ratelimit.limit): the same counts without the Map of pending costs and the
   * arrays a batch needs.
   */
  private checkOne(c: LimitCheck, now: number): LimitResult {
    const seq = Math.floor(now / c.duration);
    const w = this.window(c.counter ?? counterOf(c.key, c.duration), seq, c.duration);
    const elapsed = (now - seq * c.duration) / c.duration;
    const effective = w.cur + Math.trunc(w.prev * (1 - elapsed)) + c.cost;
    const passed = c.limit > 0 && effective <= c.limit;
    if (passed) w.cur += c.cost;
    return { passed, limit: c.limit, remaining: passed ? Math.max(0, c.limit - effective) : 0, reset: (seq + 1) * c.duration };
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private window(key: string, seq: number, duration: number): Window {
    let w = this.windows.get(key);
    if (w === undefined) {
      w = { seq, cur: 0, prev: 0, duration };
      this.windows.set(key, w);
    } else if (w.seq !== seq) {
      w.prev = w.seq === seq - 1 ? w.cur : 0;
      w.cur = 0;
      w.seq = seq;
    }
    return w;
  }

  private sweep(now: number): void {
    const stale: string[] = [];
    for (const [key, w] of this.windows.entries()) if (Math.floor(now / w.duration) > w.seq + 1) stale.push(key);
    for (const key of stale) this.windows.delete(key);
  }
}
