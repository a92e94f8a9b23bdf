// Rate-limit counters shared by every keyhold instance through Redis
// (docs/ratelimits.md, "Where the counters live"). The check() calls made in
// one event-loop turn (one per concurrent request), or while the last script
// call is still at Redis, in every turn until it is answered, go to Redis as one
// Lua script call, each check() call a group within it: for
// each group in turn, the script reads each check's current and previous window
// counters, evaluates them with the same arithmetic as MemoryLimiter, and only
// when every check of the group passes INCRBYs its current counters
// (all-or-nothing per group, and the whole script atomic in Redis, so the
// groups are counted exactly as separate calls in that order would be;
// consecutive identical checks go as one run, see SCRIPT). One
// script call per turn instead of one per request took ~40% of the keyhold CPU
// a rate-limited verification spent on Redis (bench/README.md). Window numbers come from the `now` passed in (the service clock), not
// from Redis TIME. Counter keys expire by themselves (PEXPIRE 2×duration + margin,
// set when a window's counter is made).
//
// When Redis is unreachable or a command fails or times out, answers come from
// the fallback chosen by `whenDown`: a local MemoryLimiter ("local"), allow
// everything ("open") or deny everything ("closed"). ioredis reconnects by
// itself and shared counting resumes with no restart.
//
// On a Redis Cluster (REDIS_URL=redis-cluster://…) a script may only touch keys
// of one hash slot. Each check's two counters share its hash tag, so one check
// is always one slot; a turn's groups are split by slot, one script call per
// slot. A group whose checks fall in several slots (a key's limits with its
// identity's, ratelimit.multiLimit) is checked one slot after the other in slot
// order, each part all-or-nothing; when a part is denied, the parts that counted
// before it are given back (khRefund). It never allows more than a limit: while
// a give-back is on its way (one round trip), a concurrent check of those
// counters sees them higher than they will be and may be denied where one
// script would have allowed it.

import calculateSlot from "cluster-key-slot";
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../core/logger.js";
import { type LimitCheck, type Limiter, type LimitResult, MemoryLimiter } from "./memory-limiter.js";
import { connectRedis, parseRedisUrl } from "./redis-client.js";

export type WhenRedisDown = "local" | "open" | "closed";

export interface RedisLimiterOptions {
  /** REDIS_URL: one Redis, a Redis Cluster or Sentinel (src/storage/redis-client.ts). */
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
// ARGV: [1] = number of groups G, [2] = the expiry margin in ms, [3..G+2] =
// checks in each group (negative: a read-only group, evaluated with its costs
// but never counted), [G+3..2G+2] = how many times each group is asked for in
// a row (a run: more than 1 only for a group of one check), then per check i
// four values from index 2G+2+4(i-1)+1: limit, cost, ms since window start, duration.
// Returns the effective count of every check (cur + pending + trunc(prev × (1 − elapsed)) + cost),
// except that a run returns two values: the effective count of its first group
// and how many of its groups passed. Its groups are evaluated one after the
// other, each counting when it passes, as the same number of groups of that one
// check would be: the j-th (from 0) has effective count first + j × cost while
// j < passed, and first + passed × cost after (nothing counted once one fails).
//
// Every counter of the call is read with one MGET, and each counter that gains
// is written with one INCRBY at the end (the call is atomic: the groups see each
// other's counts in the Lua table as they would in Redis). A counter's expiry is
// set once, by the INCRBY that makes it (its answer is then exactly what was
// added; a counter given back to 0 gets it again, harmlessly). It still outlives
// its window pair: made at the earliest at its window's start (less the clock
// skew the margin allows), it expires 2 durations plus the margin later. The
// script's time a check (INFO commandstats, calls of 16 checks on 3 counters):
// 3.6 µs with GET, GET, INCRBY and PEXPIRE for every check, 2.3 µs so.
//
// Runs are for a hot key: the concurrent requests of one turn that verify it
// (or call ratelimit.limit on one identifier) ask for the same check, and go as
// one, so that neither keyhold (~6 arguments a check to build, size and frame)
// nor the script (a check's reads, arithmetic and reply element) pays per request.
const SCRIPT = `
local groups = tonumber(ARGV[1])
local margin = tonumber(ARGV[2])
local base = 2 + 2 * groups
-- Every counter read at once, then kept current here as the groups count.
local val = {}
for from = 1, #KEYS, 1000 do
  local to = math.min(from + 999, #KEYS)
  local got = redis.call("MGET", unpack(KEYS, from, to))
  for k = from, to do val[KEYS[k]] = tonumber(got[k - from + 1]) or 0 end
end
-- What the groups that pass add to each counter, written once a counter at the end.
local add, ttl, order = {}, {}, {}
local function count(cur, n, dur)
  val[cur] = val[cur] + n
  local added = add[cur]
  if added == nil then
    order[#order + 1] = cur
    add[cur] = n
    ttl[cur] = 2 * dur + margin
  else
    add[cur] = added + n
  end
end
local eff = {}
local first = 1
for g = 1, groups do
  local size = tonumber(ARGV[2 + g])
  local times = tonumber(ARGV[2 + groups + g])
  local readonly = size < 0
  if readonly then size = -size end
  local last = first + size - 1
  if times > 1 then
    local cur = KEYS[2 * first - 1]
    local a = base + (first - 1) * 4
    local limit = tonumber(ARGV[a + 1])
    local cost = tonumber(ARGV[a + 2])
    local dur = tonumber(ARGV[a + 4])
    local e = val[cur] + math.floor(val[KEYS[2 * first]] * (1 - tonumber(ARGV[a + 3]) / dur)) + cost
    local passed = 0
    if limit > 0 and e <= limit then
      if cost > 0 then passed = math.min(times, math.floor((limit - e) / cost) + 1) else passed = times end
    end
    eff[#eff + 1] = e
    eff[#eff + 1] = passed
    if passed > 0 and cost > 0 then count(cur, passed * cost, dur) end
  else
    local pending = {}
    local all = true
    for i = first, last do
      local cur = KEYS[2 * i - 1]
      local a = base + (i - 1) * 4
      local limit = tonumber(ARGV[a + 1])
      local cost = tonumber(ARGV[a + 2])
      local off = tonumber(ARGV[a + 3])
      local dur = tonumber(ARGV[a + 4])
      local before = pending[cur] or 0
      pending[cur] = before + cost
      local e = val[cur] + before + math.floor(val[KEYS[2 * i]] * (1 - off / dur)) + cost
      eff[#eff + 1] = e
      if limit <= 0 or e > limit then all = false end
    end
    if all and not readonly then
      for i = first, last do
        local a = base + (i - 1) * 4
        local cost = tonumber(ARGV[a + 2])
        if cost > 0 then count(KEYS[2 * i - 1], cost, tonumber(ARGV[a + 4])) end
      end
    end
  end
  first = last + 1
end
for _, key in ipairs(order) do
  local n = add[key]
  if redis.call("INCRBY", key, n) == n then redis.call("PEXPIRE", key, ttl[key]) end
end
return eff
`;

// Gives back a check's cost to its current counter, unless it has expired meanwhile
// (a DECRBY would create it again, negative and without an expiry).
const REFUND = `
if redis.call("EXISTS", KEYS[1]) == 1 then return redis.call("DECRBY", KEYS[1], ARGV[1]) end
return 0
`;

/** Groups sent in one script call at most (a turn with more makes several calls). */
const MAX_GROUPS = 256;

/** The script's values a check: limit, cost, ms since window start, duration. */
const PER_CHECK = 4;

/** One check() call waiting for the turn's script call. */
interface Group {
  keys: string[];
  /** PER_CHECK values a check. */
  args: number[];
  size: number;
  /** Evaluated with its costs, never counted (the rest of a denied group on a cluster). */
  readOnly?: boolean;
  resolve: (effective: number[]) => void;
  reject: (err: unknown) => void;
}

interface LimitCommand {
  /** One array: ioredis flattens it into the call's arguments, without a spread here. */
  khRateLimit(args: (string | number)[]): Promise<number[]>;
  khRefund(key: string, cost: number): Promise<number>;
}

/** Both groups are one and the same check, counted (not read-only): they can go as one run. */
function sameSingle(a: Group, b: Group): boolean {
  if (a.size !== 1 || b.size !== 1 || a.readOnly === true || b.readOnly === true || a.keys[0] !== b.keys[0]) return false;
  for (let i = 0; i < PER_CHECK; i++) if (a.args[i] !== b.args[i]) return false;
  return true;
}

/** Errors that only a Redis Cluster answers: REDIS_URL names one of its nodes as if it were a single Redis. */
const CLUSTER_REPLY = /^(MOVED|ASK|CROSSSLOT|CLUSTERDOWN)\b/;

export class RedisLimiter implements Limiter {
  readonly redis: Redis | Cluster;
  /** True on a Redis Cluster: script calls are split by hash slot. */
  readonly cluster: boolean;
  private readonly local = new MemoryLimiter();
  private readonly log: Logger;
  private readonly whenDown: WhenRedisDown;
  private readonly prefix: string;
  private readonly marginMs: number;
  private down = false;
  private closing = false;
  private toldCluster = false;
  /** While down: a probe every second, so that recovery is seen without traffic (and /readyz turns 200 again). */
  private probe: NodeJS.Timeout | undefined;
  /** Bumped by every markDown: a probe started before the last one may not declare Redis back. */
  private downs = 0;
  /** Groups over several slots still going through their parts (close() waits for them). */
  private readonly spanning = new Set<Promise<void>>();
  /** check() calls waiting for the next script call (enqueue). */
  private queue: Group[] = [];
  /** Script calls sent and not yet answered: while any is, new groups wait for it (see enqueue). */
  private inFlight = 0;
  /** The error of a call that failed while others sent with it are still at Redis (see sent). */
  private failed: unknown = undefined;

  constructor(opts: RedisLimiterOptions) {
    this.log = opts.log;
    this.whenDown = opts.whenDown ?? "local";
    this.prefix = opts.keyPrefix ?? "kh:rl:";
    this.marginMs = opts.expiryMarginMs ?? 60_000;
    const target = parseRedisUrl(opts.url);
    this.cluster = target.mode === "cluster";
    this.redis = connectRedis(target, { commandTimeoutMs: opts.commandTimeoutMs ?? 200, maxReconnectDelayMs: opts.maxReconnectDelayMs ?? 1_000 });
    this.redis.defineCommand("khRateLimit", { lua: SCRIPT });
    this.redis.defineCommand("khRefund", { lua: REFUND, numberOfKeys: 1 });
    this.redis.on("error", (err: Error) => this.markDown(err));
    this.redis.on("close", () => this.markDown(new Error("connection to Redis closed")));
    // A cluster is "ready" once its slot map is read, whatever its masters' state: the probe decides.
    this.redis.on("ready", () => (this.cluster ? this.probeOnce() : this.markUp()));
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
    const args: number[] = [];
    const seqs: number[] = [];
    for (const c of checks) {
      const seq = Math.floor(now / c.duration);
      seqs.push(seq);
      keys.push(this.counterKey(c, seq), this.counterKey(c, seq - 1));
      args.push(c.limit, c.cost, now - seq * c.duration, c.duration);
    }
    // An answer to a call made before the last markDown says nothing of what went
    // wrong after it (the warn, "back", warn seen when one came in after an error):
    // only a later call's answer, or the probe, may mark Redis back.
    const downs = this.downs;
    let effective: number[];
    try {
      effective = await new Promise<number[]>((resolve, reject) => {
        this.enqueue({ keys, args, size: checks.length, resolve, reject });
      });
    } catch (err) {
      this.markDown(err as Error);
      return this.fallback(checks, now);
    }
    // On a cluster, one slot answering says nothing of the others: recovery is the probe's to decide.
    if (!this.cluster && downs === this.downs) this.markUp();
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

  /** Sends the turn's groups: one script call per MAX_GROUPS of them (on a cluster, per slot). */
  private flush(): Promise<void>[] {
    const queued = this.queue;
    this.queue = [];
    const sent: Promise<void>[] = [];
    const chunks = (groups: Group[]) => {
      for (let i = 0; i < groups.length; i += MAX_GROUPS) sent.push(this.sent(this.send(groups.slice(i, i + MAX_GROUPS))));
    };
    if (!this.cluster) chunks(queued);
    else for (const groups of this.bySlot(queued).values()) chunks(groups);
    return sent;
  }

  /**
   * Queues a group for the next script call: it goes when this turn ends, or,
   * while a call is at Redis, when the last one is answered (with every group
   * queued meanwhile). One call in flight at a time: each call is a write to
   * the socket, ~20 µs of keyhold's CPU on loopback, the kernel's part mostly
   * (`writeUtf8String` 2.0 µs a request in a verifyLimitRedis profile, ~10
   * requests a call). With one in flight, ~16 requests a call instead of ~10
   * (INFO commandstats over a bench run); `npm run bench:ab` with Redis
   * (bench/README.md): keyhold's CPU a request ×0.89-1.02 (medians of five
   * runs ×0.926 verifyLimit, ×0.960 ratelimitLimit), req/s ×1.00-1.12.
   */
  private enqueue(g: Group): void {
    this.queue.push(g);
    if (this.queue.length === 1 && this.inFlight === 0) setImmediate(() => void this.flush());
  }

  /**
   * Counts a script call (its error, or undefined) while it is at Redis. When the
   * last one is answered, what queued meanwhile goes; when one of them failed
   * (a timeout, Redis gone), what queued is answered from the fallback at once,
   * as its own call would most likely have been after a timeout of its own. So a
   * check waits at most the rest of the call before it and then its own call's
   * timeout, never two timeouts.
   */
  private sent(call: Promise<unknown>): Promise<void> {
    this.inFlight++;
    return call.then((err) => {
      if (err !== undefined) this.failed ??= err;
      if (--this.inFlight > 0) return;
      const failed = this.failed;
      this.failed = undefined;
      if (failed === undefined) {
        if (this.queue.length > 0) setImmediate(() => void this.flush());
        return;
      }
      const waiting = this.queue;
      this.queue = [];
      for (const g of waiting) g.reject(failed);
    });
  }

  /**
   * A cluster's turn, slot by slot. A group within one slot goes as it is. A group
   * over several slots is checked one slot after the other, in slot order: its
   * part in the lowest slot goes in this turn; only when that part passed (and so
   * counted) does the next part go, in a later turn. When a part is denied, the
   * parts after it are read at cost 0 (so every check still reports its count),
   * and the parts before it are given back. The fixed order matters: two callers
   * that each counted one part first and were then denied on the other's would
   * both fail (with a burst on two instances, all of them did), where in slot
   * order the first slot decides who goes on.
   */
  private bySlot(queued: Group[]): Map<number, Group[]> {
    const slots = new Map<number, Group[]>();
    const put = (slot: number, g: Group) => {
      const list = slots.get(slot);
      if (list === undefined) slots.set(slot, [g]);
      else list.push(g);
    };
    for (const g of queued) {
      const slotOf = Array.from({ length: g.size }, (_, i) => calculateSlot(g.keys[2 * i] as string));
      const distinct = [...new Set(slotOf)].sort((x, y) => x - y);
      if (distinct.length === 1) put(distinct[0] as number, g);
      else this.inSlotOrder(g, slotOf, distinct, put);
    }
    return slots;
  }

  private inSlotOrder(g: Group, slotOf: number[], distinct: number[], put: (slot: number, g: Group) => void): void {
    type Part = { slot: number; at: number[] };
    const parts: Part[] = distinct.map((slot) => ({ slot, at: slotOf.flatMap((s, i) => (s === slot ? [i] : [])) }));
    const effective: number[] = new Array(g.size).fill(0);
    const counted: Part[] = [];
    let settle!: () => void;
    const done = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.spanning.add(done);
    const end = (outcome: { effective: number[] } | { err: unknown }) => {
      this.spanning.delete(done);
      settle();
      if ("err" in outcome) g.reject(outcome.err);
      else g.resolve(outcome.effective);
    };
    /** A part as a group of its own; read-only parts are evaluated with their costs and never counted. */
    const partGroup = (p: Part, readOnly: boolean, resolve: (eff: number[]) => void, reject: (err: unknown) => void): Group => ({
      keys: p.at.flatMap((i) => [g.keys[2 * i] as string, g.keys[2 * i + 1] as string]),
      args: p.at.flatMap((i) => g.args.slice(PER_CHECK * i, PER_CHECK * i + PER_CHECK)),
      size: p.at.length,
      readOnly,
      resolve,
      reject,
    });
    /** Records a part's counts; true if every check passed. */
    const record = (p: Part, eff: number[]): boolean => {
      let ok = true;
      p.at.forEach((i, j) => {
        effective[i] = Number(eff[j]);
        const limit = Number(g.args[PER_CHECK * i]);
        if (limit <= 0 || (effective[i] as number) > limit) ok = false;
      });
      return ok;
    };
    /**
     * Part `from - 1` was denied: the group is denied. The parts that counted are
     * given back at once; the parts after it are read (so each check reports its
     * count), and one whose read fails is reported as not passed: the answer is a
     * denial either way.
     */
    const denied = (from: number) => {
      const refunds = counted.flatMap((p) => p.at.map((i) => this.refund(g, i)));
      const reads = parts.slice(from).map(
        (p) =>
          new Promise<void>((resolve) => {
            const unread = () => {
              for (const i of p.at) effective[i] = Number.MAX_SAFE_INTEGER;
              resolve();
            };
            this.enqueue(
              partGroup(
                p,
                true,
                (eff) => {
                  record(p, eff);
                  resolve();
                },
                unread,
              ),
            );
          }),
      );
      void Promise.all([...refunds, ...reads]).then(() => end({ effective }));
    };
    const step = (k: number, submit: (slot: number, part: Group) => void) => {
      const p = parts[k] as Part;
      submit(
        p.slot,
        partGroup(
          p,
          false,
          (eff) => {
            if (!record(p, eff)) return denied(k + 1);
            counted.push(p);
            if (k + 1 < parts.length) step(k + 1, (_slot, part) => this.enqueue(part));
            else end({ effective });
          },
          // The call failed (timeout, node down): give back what counted, and let the caller fall back.
          (err) => void Promise.all(counted.flatMap((c) => c.at.map((i) => this.refund(g, i)))).then(() => end({ err })),
        ),
      );
    };
    step(0, put);
  }

  /** Gives back check i of group g; a failure only leaves that counter high until its window ends. */
  private async refund(g: Group, i: number): Promise<void> {
    const cost = Number(g.args[PER_CHECK * i + 1]);
    if (cost <= 0) return;
    try {
      await (this.redis as unknown as LimitCommand).khRefund(g.keys[2 * i] as string, cost);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, "a rate-limit count could not be given back: that counter stays high until its window ends");
    }
  }

  /** One script call of these groups; resolves to its error when it failed (the groups are rejected with it), else undefined. */
  private async send(groups: Group[]): Promise<unknown> {
    // Consecutive groups of one check asking for the same thing go as one run (see
    // SCRIPT); only consecutive ones, so that every group is still counted in its turn.
    const entries: { head: Group; members: Group[] }[] = [];
    let last: { head: Group; members: Group[] } | undefined;
    for (const g of groups) {
      if (last !== undefined && sameSingle(last.head, g)) last.members.push(g);
      else {
        last = { head: g, members: [g] };
        entries.push(last);
      }
    }
    // The call's arguments in one array, in the script's order: the number of keys, the keys, then ARGV.
    let keyCount = 0;
    for (const { head } of entries) keyCount += head.keys.length;
    const call: (string | number)[] = [keyCount];
    for (const { head } of entries) for (const k of head.keys) call.push(k);
    call.push(entries.length, this.marginMs);
    for (const { head } of entries) call.push(head.readOnly === true ? -head.size : head.size);
    for (const { members } of entries) call.push(members.length);
    for (const { head } of entries) for (const a of head.args) call.push(a);
    try {
      const effective = await (this.redis as unknown as LimitCommand).khRateLimit(call);
      let at = 0;
      for (const { head, members } of entries) {
        if (members.length === 1) {
          head.resolve(effective.slice(at, at + head.size));
          at += head.size;
          continue;
        }
        const first = Number(effective[at]);
        const passed = Number(effective[at + 1]);
        const cost = head.args[1] as number;
        at += 2;
        members.forEach((member, j) => {
          member.resolve([first + cost * Math.min(j, passed)]);
        });
      }
    } catch (err) {
      this.tellCluster(err as Error);
      for (const g of groups) g.reject(err);
      return err ?? new Error("the rate-limit script call failed");
    }
    return undefined;
  }

  /** Says once, plainly, that REDIS_URL names a cluster node as if it were one Redis. */
  private tellCluster(err: Error): void {
    if (this.cluster || this.toldCluster || !CLUSTER_REPLY.test(err.message ?? "")) return;
    this.toldCluster = true;
    this.log.error(
      { err: { message: err.message } },
      "REDIS_URL names a node of a Redis Cluster as if it were a single Redis: set REDIS_URL=redis-cluster://host:port[,host:port…] so that each counter goes to the node that holds it",
    );
  }

  /** Whether Redis answers now: one Redis (or Sentinel's master) a PING; a cluster, every master it knows. */
  private async answers(): Promise<boolean> {
    try {
      if (this.redis.status !== "ready") return false;
      if (!this.cluster) return (await (this.redis as Redis).ping()) === "PONG";
      // Every slot has a master this client is connected to, and each of them answers.
      // Until the cluster has promoted a replica (and the client has read the new
      // slot map, every 2 s), a slot still names the dead master.
      const c = this.redis as Cluster;
      const owners = new Set<string>();
      for (let slot = 0; slot < 16_384; slot++) {
        const owner = c.slots[slot]?.[0];
        if (owner === undefined) return false;
        owners.add(owner);
      }
      const connected = new Map(c.nodes("master").map((n) => [`${n.options.host}:${n.options.port}`, n]));
      const pings = [...owners].map((key) => connected.get(key)?.ping() ?? Promise.resolve("unknown"));
      return (await Promise.all(pings)).every((r) => r === "PONG");
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.probe);
    // Checks of this turn go out before the connection is closed (their scheduled flush finds nothing left),
    // and groups over several slots finish their parts and give-backs.
    await Promise.all(this.flush());
    for (let rounds = 0; this.spanning.size > 0 && rounds < 100; rounds++) await Promise.all([...this.spanning]);
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
    // The part in braces is the hash tag: the counter's own name, or the tag it shares.
    return c.slotTag === undefined ? `${this.prefix}{${c.key}}:${c.duration}:${seq}` : `${this.prefix}{${c.slotTag}}${c.key}:${c.duration}:${seq}`;
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

  /** Asks whether Redis answers; marks it back only if it was not marked down again meanwhile. */
  private probeOnce(): void {
    const downs = this.downs;
    void this.answers().then((ok) => {
      if (ok && downs === this.downs) this.markUp();
    });
  }

  private markDown(err: Error): void {
    if (this.down || this.closing) return;
    this.down = true;
    this.downs++;
    this.probe = setInterval(() => this.probeOnce(), 1_000);
    this.probe.unref();
    this.log.warn(
      { err: { message: err.message }, fallback: this.whenDown },
      `Redis is unavailable: rate limits are answered ${this.whenDown === "local" ? "from local counters" : this.whenDown === "open" ? "by allowing everything" : "by denying everything"} until it is back`,
    );
  }

  private markUp(): void {
    if (!this.down || this.closing) return;
    this.down = false;
    clearInterval(this.probe);
    this.probe = undefined;
    this.log.info({}, "Redis is back: rate-limit counters are shared again");
  }
}
