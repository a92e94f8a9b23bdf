// The sliding-window limiter (docs/ratelimits.md, "The algorithm"), driven by explicit `now`
// values so every case is exact:
//   effective = cur + trunc(prev × (1 − elapsed)) + cost; denied when effective > limit.
import { afterEach, describe, expect, it } from "vitest";
import { type LimitCheck, MemoryLimiter } from "./memory-limiter.js";

const limiters: MemoryLimiter[] = [];
const make = (): MemoryLimiter => {
  const l = new MemoryLimiter();
  limiters.push(l);
  return l;
};
afterEach(async () => {
  for (const l of limiters.splice(0)) await l.close();
});

const check = (key: string, limit: number, duration: number, cost = 1): LimitCheck => ({ key, limit, duration, cost });
const one = (l: MemoryLimiter, c: LimitCheck, now: number) => l.checkSync([c], now)[0] as NonNullable<ReturnType<MemoryLimiter["checkSync"]>[0]>;

const D = 10_000; // window length
const W = 1_700_000_000_000 - (1_700_000_000_000 % D); // an epoch-aligned window start

describe("MemoryLimiter: one window", () => {
  it("allows exactly `limit` requests in a window, then denies; remaining counts down; reset is the window's end", () => {
    const l = make();
    const c = check("k", 3, D);
    expect(one(l, c, W)).toEqual({ passed: true, limit: 3, remaining: 2, reset: W + D });
    expect(one(l, c, W + 1)).toEqual({ passed: true, limit: 3, remaining: 1, reset: W + D });
    expect(one(l, c, W + D - 1)).toEqual({ passed: true, limit: 3, remaining: 0, reset: W + D });
    expect(one(l, c, W + D - 1)).toEqual({ passed: false, limit: 3, remaining: 0, reset: W + D });
  });

  it("a denied request consumes nothing", () => {
    const l = make();
    const c = check("k", 2, D);
    one(l, c, W);
    one(l, c, W);
    for (let i = 0; i < 5; i++) expect(one(l, c, W + 10).passed).toBe(false);
    // Next window: the previous count is 2 (not 7).
    expect(one(l, c, W + D + D / 2)).toMatchObject({ passed: true, remaining: 0 }); // 0 + trunc(2 × 0.5) + 1 = 2
  });

  it("windows are aligned to the Unix epoch", () => {
    const l = make();
    const c = check("k", 1, D);
    expect(one(l, c, W + D - 1)).toMatchObject({ passed: true, reset: W + D });
    expect(one(l, c, W + 2 * D - 1)).toMatchObject({ reset: W + 2 * D });
  });

  it("a cost above 1 consumes that many", () => {
    const l = make();
    expect(one(l, check("k", 10, D, 7), W)).toMatchObject({ passed: true, remaining: 3 });
    expect(one(l, check("k", 10, D, 4), W)).toMatchObject({ passed: false, remaining: 0 });
    expect(one(l, check("k", 10, D, 3), W)).toMatchObject({ passed: true, remaining: 0 });
  });

  it("a cost above the limit is denied even in an empty window", () => {
    const l = make();
    expect(one(l, check("k", 5, D, 6), W)).toMatchObject({ passed: false, remaining: 0 });
    expect(one(l, check("k", 5, D, 5), W)).toMatchObject({ passed: true, remaining: 0 });
  });
});

describe("MemoryLimiter: sliding weight of the previous window", () => {
  it("at the very start of the next window the previous count weighs fully", () => {
    const l = make();
    const c = check("k", 10, D);
    for (let i = 0; i < 10; i++) one(l, c, W + 100);
    expect(one(l, c, W + D)).toMatchObject({ passed: false, remaining: 0 }); // 0 + trunc(10 × 1) + 1 = 11
  });

  it("a quarter into the next window, 75% of the previous count (truncated) still counts", () => {
    const l = make();
    const c = check("k", 10, D);
    for (let i = 0; i < 10; i++) one(l, c, W);
    const t = W + D + D / 4; // trunc(10 × 0.75) = 7
    expect(one(l, c, t)).toMatchObject({ passed: true, remaining: 2 }); // 0 + 7 + 1 = 8
    expect(one(l, c, t)).toMatchObject({ passed: true, remaining: 1 }); // 1 + 7 + 1 = 9
    expect(one(l, c, t)).toMatchObject({ passed: true, remaining: 0 }); // 2 + 7 + 1 = 10
    expect(one(l, c, t)).toMatchObject({ passed: false, remaining: 0 }); // 3 + 7 + 1 = 11
  });

  it("the weight truncates: 3 × 0.5 counts as 1", () => {
    const l = make();
    const c = check("k", 3, D);
    for (let i = 0; i < 3; i++) one(l, c, W);
    expect(one(l, c, W + D + D / 2)).toMatchObject({ passed: true, remaining: 1 }); // 0 + trunc(1.5) + 1 = 2
    expect(one(l, c, W + D + D / 2)).toMatchObject({ passed: true, remaining: 0 }); // 1 + 1 + 1 = 3
    expect(one(l, c, W + D + D / 2)).toMatchObject({ passed: false }); // 2 + 1 + 1 = 4
  });

  it("the weight fades as the window advances", () => {
    const l = make();
    const c = check("k", 10, D, 0);
    for (let i = 0; i < 10; i++) one(l, check("k", 10, D), W);
    // cost 0 only looks: remaining = limit - (cur + weighted prev)
    expect(one(l, c, W + D).remaining).toBe(0);
    expect(one(l, c, W + D + D / 10).remaining).toBe(1); // trunc(10 × 0.9) = 9
    expect(one(l, c, W + D + D / 2).remaining).toBe(5);
    expect(one(l, c, W + 2 * D - 1).remaining).toBe(10); // trunc(10 × 0.0001) = 0
  });

  it("a window two or more back no longer counts", () => {
    const l = make();
    const c = check("k", 5, D);
    for (let i = 0; i < 5; i++) one(l, c, W);
    expect(one(l, c, W + 2 * D)).toMatchObject({ passed: true, remaining: 4 });
  });
});

describe("MemoryLimiter: cost 0", () => {
  it("passes at exactly the limit and consumes nothing", () => {
    const l = make();
    const c = check("k", 2, D);
    one(l, c, W);
    one(l, c, W);
    expect(one(l, check("k", 2, D, 0), W)).toMatchObject({ passed: true, remaining: 0 });
    expect(one(l, check("k", 2, D, 0), W)).toMatchObject({ passed: true, remaining: 0 });
    expect(one(l, c, W).passed).toBe(false);
  });

  it("in an empty window reports the full limit and consumes nothing", () => {
    const l = make();
    for (let i = 0; i < 5; i++) expect(one(l, check("k", 3, D, 0), W)).toMatchObject({ passed: true, remaining: 3 });
    expect(one(l, check("k", 3, D), W)).toMatchObject({ passed: true, remaining: 2 });
  });
});

describe("MemoryLimiter: a batch is all or nothing", () => {
  it("when one check fails, none consumes; passing entries report their cost given back", () => {
    const l = make();
    one(l, check("b", 1, D), W); // b is used up
    const results = l.checkSync([check("a", 5, D, 2), check("b", 1, D)], W);
    expect(results).toEqual([
      { passed: true, limit: 5, remaining: 5, reset: W + D }, // 5 - (0 + 2) + 2
      { passed: false, limit: 1, remaining: 0, reset: W + D },
    ]);
    // a was not consumed.
    expect(one(l, check("a", 5, D, 5), W)).toMatchObject({ passed: true, remaining: 0 });
  });

  it("when every check passes, all consume", () => {
    const l = make();
    const results = l.checkSync([check("a", 5, D, 2), check("b", 3, D, 1)], W);
    expect(results.map((r) => [r.passed, r.remaining])).toEqual([
      [true, 3],
      [true, 2],
    ]);
    expect(one(l, check("a", 5, D, 0), W).remaining).toBe(3);
    expect(one(l, check("b", 3, D, 0), W).remaining).toBe(2);
  });

  it("an empty batch passes", () => {
    expect(make().checkSync([], W)).toEqual([]);
  });

  it("a check alone (counted without the batch's bookkeeping) answers as it does in a batch whose other check passes", () => {
    const alone = make();
    const batched = make();
    // A fixed pseudo-random walk over a dozen windows: costs 0-3, limits 0-9, two counters.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return Math.floor(seed / 65_536) % n; // the high bits: the low bits of this generator repeat every few draws
    };
    let now = W;
    const answers: boolean[] = [];
    for (let i = 0; i < 400; i++) {
      now += next(600);
      const c = check(`k${next(2)}`, next(10), D, next(4));
      const got = one(alone, c, now);
      expect(got).toEqual(batched.checkSync([c, check("free", 1_000_000, D)], now)[0]);
      answers.push(got.passed);
    }
    // The walk reaches both answers often, and crosses windows (the previous count's weight).
    expect(answers.filter((a) => a).length).toBeGreaterThan(100);
    expect(answers.filter((a) => !a).length).toBeGreaterThan(100);
    expect(now).toBeGreaterThan(W + 2 * D);
  });

  it("the async check gives the same answers", async () => {
    const l = make();
    expect(await l.check([check("a", 1, D)], W)).toEqual([{ passed: true, limit: 1, remaining: 0, reset: W + D }]);
    expect(await l.check([check("a", 1, D)], W)).toEqual([{ passed: false, limit: 1, remaining: 0, reset: W + D }]);
  });
});

describe("MemoryLimiter: limit 0 and isolation", () => {
  it("limit 0 always denies, whatever the cost, and consumes nothing", () => {
    const l = make();
    expect(one(l, check("z", 0, D), W)).toMatchObject({ passed: false, remaining: 0 });
    expect(one(l, check("z", 0, D, 0), W)).toMatchObject({ passed: false, remaining: 0 });
    expect(one(l, check("z", 5, D), W)).toMatchObject({ passed: true, remaining: 4 });
  });

  it("a limit-0 check in a batch makes the whole batch consume nothing", () => {
    const l = make();
    const results = l.checkSync([check("a", 5, D), check("z", 0, D)], W);
    expect(results.map((r) => r.passed)).toEqual([true, false]);
    expect(one(l, check("a", 5, D, 0), W).remaining).toBe(5);
  });

  it("different keys have different counters", () => {
    const l = make();
    expect(one(l, check("x", 1, D), W).passed).toBe(true);
    expect(one(l, check("x", 1, D), W).passed).toBe(false);
    expect(one(l, check("y", 1, D), W).passed).toBe(true);
  });

  it("the same key with another duration is another counter", () => {
    const l = make();
    expect(one(l, check("x", 1, D), W).passed).toBe(true);
    expect(one(l, check("x", 1, 2 * D), W).passed).toBe(true);
    expect(one(l, check("x", 1, D), W).passed).toBe(false);
  });

  it("different limiters share nothing", () => {
    const a = make();
    const b = make();
    expect(one(a, check("x", 1, D), W).passed).toBe(true);
    expect(one(b, check("x", 1, D), W).passed).toBe(true);
  });
});
