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
 * `key:key_1ChQh4…`; a remembered miss, `import|<migration>|<hash>`) end in a
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

/** What a shard is: a Map, or an lru-cache. */
interface Table<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): unknown;
  delete(key: string): unknown;
  clear(): void;
  readonly size: number;
}

/** String keys in `shards` tables (a power of two), each key in the one shardOf picks. */
class Sharded<V> {
  protected readonly shards: Table<V>[];
  private readonly mask: number;

  constructor(shards: number, table: () => Table<V>) {
    if (!Number.isInteger(shards) || shards < 1 || (shards & (shards - 1)) !== 0) throw new Error(`shards must be a power of two (got ${shards})`);
    this.mask = shards - 1;
    this.shards = Array.from({ length: shards }, table);
  }

  get(key: string): V | undefined {
    return (this.shards[shardOf(key, this.mask)] as Table<V>).get(key);
  }

  set(key: string, value: V): void {
    (this.shards[shardOf(key, this.mask)] as Table<V>).set(key, value);
  }

  delete(key: string): void {
    (this.shards[shardOf(key, this.mask)] as Table<V>).delete(key);
  }

  clear(): void {
    for (const s of this.shards) s.clear();
  }

  get size(): number {
    let n = 0;
    for (const s of this.shards) n += s.size;
    return n;
  }

  get shardCount(): number {
    return this.shards.length;
  }
}

/**
 * An LRU of string keys as `shards` lru-caches, each holding its share of `max`
 * and `maxSize` (rounded up): least recently used within its shard, which for
 * keys spread evenly over the shards is the least recently used of the cache
 * but for at most a shard's rounding.
 */
export class ShardedLru<V extends {}> extends Sharded<V> {
  constructor(opts: LRUCache.Options<string, V, unknown> & { max: number }, shards: number) {
    const each: LRUCache.Options<string, V, unknown> = { ...opts, max: Math.ceil(opts.max / shards) };
    if (opts.maxSize !== undefined) each.maxSize = Math.ceil(opts.maxSize / shards);
    super(shards, () => new LRUCache<string, V>(each));
  }
}

/** A Map of string keys as `shards` Maps (no bound: the shards only keep each table small). */
export class ShardedMap<V> extends Sharded<V> {
  constructor(shards: number) {
    super(shards, () => new Map<string, V>());
  }
}
