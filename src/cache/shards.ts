// A large cache's tables cut into shards, so that none of them is rebuilt in one
// piece while a request waits. A V8 Map (lru-cache's key index, RecordCache's
// tag index) rebuilds its whole table when it grows, and again, at the same
// size, once the entries deleted from it fill it: a full LRU that evicts one
// record for each new one (a cold key when the cache is full) does that every
// ~1 to 2 × its size in insertions. One Map of a million SHA-256 digests, the
// oldest deleted for each one set, stopped 100-120 ms at each rebuild here.
// `npm run bench:cache-pauses` (bench/README.md, "A full cache's tables rebuilt
// in one piece"), the largest set() without a garbage collection in it, whole
// against sharded: 75-95 ms against 10-12 at 1,000,000 records, 14-21 ms
// against 4-8 at 100,000 (the default CACHE_MAX_ENTRIES). What it costs: a hot
// get() 10-40 ns more (a scratch loop), a set() that evicts ~0.8 µs more.
// The values an LRU's shards point to stay in one table (ShardedLru), for the
// garbage collector's sake.

import { LRUCache } from "lru-cache";

/** A shard's table at most: a V8 Map of this many entries is rebuilt in about a millisecond here (a million's 100-120 ms, scaled). */
export const ENTRIES_A_SHARD = 8_192;
const MAX_SHARDS = 128;
/** Shards never hold less than this many bytes each (CACHE_MAX_BYTES can be set as low as 1 KB). */
const MIN_BYTES_A_SHARD = 1 << 20;

/**
 * How many shards a cache of at most `maxEntries` entries and `maxBytes` bytes
 * is cut into: a power of two, 1 for a cache small enough that its tables cost
 * nothing to rebuild (and whose eviction order then stays exactly LRU).
 */
export function shardCount(maxEntries: number, maxBytes = Number.POSITIVE_INFINITY): number {
  let n = 1;
  while (n < MAX_SHARDS && maxEntries / n > ENTRIES_A_SHARD && maxBytes / (n * 2) >= MIN_BYTES_A_SHARD) n *= 2;
  return n;
}

/**
 * The shard of a key, of `mask + 1`: from its first four characters and four
 * near its end (the last is left out: a base64 digest's is always "="), mixed
 * (Fibonacci hashing) so that the top bits pick the shard. A SHA-256 digest's
 * first characters are uniform; the keys that share a prefix (a tag,
 * `identity:id_1ChQh4…`; a remembered miss, `import|<migration>|<hash>`) end in a
 * random id or a digest. Eight characters, not the whole key: FNV-1a over a
 * 44-character key took ~310 ns here, more than the lookup it would shard.
 */
export function shardOf(key: string, mask: number): number {
  if (mask === 0) return 0;
  const n = key.length;
  const head = (key.charCodeAt(0) << 24) ^ (key.charCodeAt(1) << 16) ^ (key.charCodeAt(2) << 8) ^ key.charCodeAt(3);
  const tail = (key.charCodeAt(n - 2) << 24) ^ (key.charCodeAt(n - 3) << 16) ^ (key.charCodeAt(n - 4) << 8) ^ key.charCodeAt(n - 5);
  return (Math.imul(head ^ Math.imul(tail, 0x85ebca6b), 0x9e3779b1) >>> 25) & mask;
}

/** `count` tables (a power of two), each key in the one shardOf picks. */
class Shards<T extends { clear(): void; readonly size: number }> {
  readonly all: readonly T[];
  private readonly mask: number;

  constructor(count: number, table: () => T) {
    if (!Number.isInteger(count) || count < 1 || (count & (count - 1)) !== 0) throw new Error(`shards must be a power of two (got ${count})`);
    this.mask = count - 1;
    this.all = Array.from({ length: count }, table);
  }

  of(key: string): T {
    return this.all[shardOf(key, this.mask)] as T;
  }

  clear(): void {
    for (const t of this.all) t.clear();
  }

  get size(): number {
    let n = 0;
    for (const t of this.all) n += t.size;
    return n;
  }
}

export interface LruOptions<V, A = undefined, B = undefined> {
  /** Entries held at most (each shard its share, rounded up). */
  max: number;
  /** With sizeCalculation: what the entries' sizes add up to at most (each shard its share, rounded up). */
  maxSize?: number;
  /** An entry's size: a whole number of at least 1. */
  sizeCalculation?: (value: V, key: string) => number;
  /** Milliseconds an entry is served for after it was set; unset, for ever. */
  ttl?: number;
  /** Called once an entry has left: pushed out for room, outlived its ttl, deleted (by clear() too), or replaced by a set(); with its extras. */
  dispose?: (value: V, key: string, reason: "evict" | "expire" | "delete" | "set", first: A, second: B) => void;
  /** Each slot holds two extras beside its value (ShardedLru.set); without, a slot holds its value alone. */
  extras?: boolean;
}

/** Slots a page of values holds. */
const PAGE_BITS = 12;
const PAGE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE - 1;

/**
 * An LRU of string keys as `shards` lru-caches, each holding its share of `max`
 * and `maxSize` (rounded up): least recently used within its shard, which for
 * keys spread evenly over the shards is the least recently used of the cache
 * but for at most a shard's rounding.
 *
 * The shards hold slot numbers; the values sit in one table of slots, in pages
 * of PAGE, a slot emptied by an eviction taken by the next value set. Why not
 * the values in the shards, as before 2026-12-03: each shard's values then sat
 * in an array of its own, one record in every `shards` in the order the miss
 * path made them, and V8's marker, which follows those arrays, went through the
 * heap in strides. A full mark of 400,000 key records in a RecordCache took
 * twice as long as in one lru-cache (scratch, a full gc() of one heap, median
 * of 7: 296-371 ms in 64 shards, 158-171 whole; in a model of it, 196, 244-264
 * and 270-277 ms at 2, 4 and 8 shards), and in a server under load that
 * marking is steps on the main thread (bench/README.md, "A full cache's churn,
 * end to end"). One table of slots, refilled in the order its records are
 * evicted, which is about the order they were made, is marked as one
 * lru-cache's values were.
 *
 * With `extras`, a slot holds two more values beside its own, which come back
 * with it (firstAt, secondAt, dispose): what a RecordCache keeps about a record
 * (its own tags, its group cells) sits beside it in the page rather than in an
 * object of its own that points at it, one object fewer a record for the
 * collector to mark (bench/README.md, "A record's entry, its `key:` tag and
 * its refill time").
 */
export class ShardedLru<V extends {}, A = undefined, B = undefined> {
  private readonly shards: Shards<LRUCache<string, number>>;
  private readonly sizeOf: ((value: V, key: string) => number) | undefined;
  private readonly maxEntrySize: number;
  private readonly dispose: LruOptions<V, A, B>["dispose"];
  /** Array elements a slot takes: its value, and its two extras if it has them. */
  private readonly stride: number;
  /**
   * Slot i's value: page i >>> PAGE_BITS, at stride * (i & PAGE_MASK), its
   * extras just after (pages added as slots are first taken, so that no array of
   * them is copied to grow).
   */
  private pages: unknown[][] = [];
  /** Slots emptied, taken again before a new one. */
  private free: number[] = [];
  /** Slots ever taken: the next new slot's number. */
  private used = 0;

  constructor(opts: LruOptions<V, A, B>, shards: number) {
    this.sizeOf = opts.sizeCalculation;
    this.dispose = opts.dispose;
    this.stride = opts.extras === true ? 3 : 1;
    const each: LRUCache.Options<string, number, unknown> = {
      max: Math.ceil(opts.max / shards),
      dispose: (slot, key, reason) => this.release(slot, key, reason === "fetch" ? "delete" : reason),
    };
    if (opts.ttl !== undefined && opts.ttl > 0) each.ttl = opts.ttl;
    // Sizes are given with each set(), reckoned from the value rather than from its slot's number.
    if (opts.sizeCalculation !== undefined) each.maxSize = Math.ceil((opts.maxSize ?? Number.MAX_SAFE_INTEGER) / shards);
    this.maxEntrySize = each.maxSize ?? Number.POSITIVE_INFINITY;
    this.shards = new Shards(shards, () => new LRUCache<string, number>(each));
  }

  get(key: string): V | undefined {
    const slot = this.shards.of(key).get(key);
    return slot === undefined ? undefined : this.valueAt(slot);
  }

  /** The slot of the key's value (a use of it, as get() is), or -1 when none is held. */
  slotOf(key: string): number {
    return this.shards.of(key).get(key) ?? -1;
  }

  /** The value a slot from slotOf holds. */
  valueAt(slot: number): V {
    return (this.pages[slot >>> PAGE_BITS] as unknown[])[this.stride * (slot & PAGE_MASK)] as V;
  }

  /** The first extra a slot from slotOf holds. */
  firstAt(slot: number): A {
    return (this.pages[slot >>> PAGE_BITS] as unknown[])[this.stride * (slot & PAGE_MASK) + 1] as A;
  }

  /** The second extra a slot from slotOf holds. */
  secondAt(slot: number): B {
    return (this.pages[slot >>> PAGE_BITS] as unknown[])[this.stride * (slot & PAGE_MASK) + 2] as B;
  }

  /** Holds `value` for `key`, and with `extras`, `first` and `second` beside it. */
  set(key: string, value: V, first?: A, second?: B): void {
    const shard = this.shards.of(key);
    const size = this.sizeOf === undefined ? undefined : this.sizeOf(value, key);
    if (size !== undefined && size > this.maxEntrySize) {
      // Never held (lru-cache holds nothing larger than its maxSize); the key's old value goes with it.
      shard.delete(key);
      return;
    }
    // A new slot even for a key held: the shard then sees a new value, counts its
    // size, and hands the old value's slot to release() (reason "set").
    const slot = this.take();
    const page = this.pages[slot >>> PAGE_BITS] as unknown[];
    const at = this.stride * (slot & PAGE_MASK);
    page[at] = value;
    if (this.stride === 3) {
      page[at + 1] = first;
      page[at + 2] = second;
    }
    // Pushes out the shard's least recently used when it is full: release() empties that slot.
    shard.set(key, slot, size === undefined ? undefined : { size });
  }

  delete(key: string): void {
    this.shards.of(key).delete(key);
  }

  clear(): void {
    this.shards.clear();
    this.pages = [];
    this.free = [];
    this.used = 0;
  }

  get size(): number {
    return this.shards.size;
  }

  get shardCount(): number {
    return this.shards.all.length;
  }

  /** A slot for a new value: the one emptied last (under churn, the one just evicted), or the next. */
  private take(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const slot = this.used++;
    if ((slot & PAGE_MASK) === 0) this.pages.push(new Array<unknown>(this.stride * PAGE).fill(undefined));
    return slot;
  }

  /** What a shard calls when an entry leaves it: the slot emptied, then the value handed to dispose. */
  private release(slot: number, key: string, reason: "evict" | "expire" | "delete" | "set"): void {
    const page = this.pages[slot >>> PAGE_BITS] as unknown[];
    const at = this.stride * (slot & PAGE_MASK);
    const value = page[at] as V;
    page[at] = undefined;
    let first: A | undefined;
    let second: B | undefined;
    if (this.stride === 3) {
      first = page[at + 1] as A;
      second = page[at + 2] as B;
      page[at + 1] = undefined;
      page[at + 2] = undefined;
    }
    this.free.push(slot);
    this.dispose?.(value, key, reason, first as A, second as B);
  }
}

/** A Map of string keys as `shards` Maps (no bound: the shards only keep each table small). */
export class ShardedMap<V> {
  private readonly shards: Shards<Map<string, V>>;

  constructor(shards: number) {
    this.shards = new Shards(shards, () => new Map<string, V>());
  }

  get(key: string): V | undefined {
    return this.shards.of(key).get(key);
  }

  set(key: string, value: V): void {
    this.shards.of(key).set(key, value);
  }

  delete(key: string): void {
    this.shards.of(key).delete(key);
  }

  clear(): void {
    this.shards.clear();
  }

  get size(): number {
    return this.shards.size;
  }
}
