// In-process caches for the hot paths: end-user key records and root keys, both
// keyed by the SHA-256 hash of the presented key. Records only, never counters:
// credits and rate-limit state are decided elsewhere. Unknown hashes are cached
// briefly as misses, in an LRU of their own: a flood of bad keys neither reaches
// the database twice for the same hash nor evicts the records of hot keys.
import { LRUCache } from "lru-cache";

export const MISS = Symbol("miss");
export type Cached<T> = T | typeof MISS;

interface Entry<T> {
  value: T;
  tags: readonly string[];
}

export interface CacheOptions {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
  /** How long an unknown hash is remembered as unknown. */
  negativeTtlMs: number;
  /** How many unknown hashes are remembered at most (default 100,000: about 10 MB). */
  maxMisses?: number;
}

/** A bounded cache of records by key hash, with invalidation by hash and by tag (e.g. an API id). */
export class RecordCache<T extends object> {
  private readonly lru: LRUCache<string, Entry<T>>;
  private readonly misses: LRUCache<string, true>;
  private readonly tags = new Map<string, Set<string>>();
  /** Bumped by every invalidation, so a load that raced one does not cache stale data. */
  generation = 0;
  /**
   * While invalidations from other instances cannot be received, records are not
   * served from (or kept in) the cache: every read goes to the database.
   */
  bypass = false;
  /** Counted for /metrics: lookups answered here, lookups that were not, records evicted for room. */
  readonly stats = { hits: 0, misses: 0, evictions: 0 };

  constructor(
    opts: CacheOptions,
    private readonly sizeOf: (v: T) => number,
  ) {
    this.misses = new LRUCache<string, true>({ max: opts.maxMisses ?? 100_000, ttl: opts.negativeTtlMs });
    this.lru = new LRUCache<string, Entry<T>>({
      max: opts.maxEntries,
      maxSize: opts.maxBytes,
      sizeCalculation: (entry, key) => key.length + Math.max(1, this.sizeOf(entry.value as T)),
      ...(opts.ttlMs > 0 ? { ttl: opts.ttlMs } : {}),
      dispose: (entry, key, reason) => {
        if (reason === "evict") this.stats.evictions++;
        this.untag(key, entry.tags);
      },
    });
  }

  get(hash: string): Cached<T> | undefined {
    if (this.bypass) {
      this.stats.misses++;
      return undefined;
    }
    const entry = this.lru.get(hash);
    if (entry !== undefined) {
      this.stats.hits++;
      return entry.value;
    }
    if (this.misses.get(hash) === true) {
      this.stats.hits++;
      return MISS;
    }
    this.stats.misses++;
    return undefined;
  }

  /**
   * The record held for this hash even while bypassed: what a read falls back to
   * when the database cannot be reached at all (stale-if-error), so cached keys
   * keep verifying through a database outage, for at most the cache TTL.
   */
  stale(hash: string): T | undefined {
    return this.lru.get(hash)?.value;
  }

  set(hash: string, value: T, tags: readonly string[] = []): void {
    if (this.bypass) return;
    this.misses.delete(hash);
    this.lru.set(hash, { value, tags });
    for (const t of tags) {
      let set = this.tags.get(t);
      if (set === undefined) this.tags.set(t, (set = new Set()));
      set.add(hash);
    }
  }

  setMiss(hash: string): void {
    if (this.bypass) return;
    this.misses.set(hash, true);
  }

  delete(hash: string): void {
    this.generation++;
    this.lru.delete(hash);
    this.misses.delete(hash);
  }

  /** Drops every record set with this tag (a key id, an API id, an identity id...). */
  deleteTag(tag: string): void {
    this.generation++;
    const set = this.tags.get(tag);
    if (set === undefined) return;
    this.tags.delete(tag);
    for (const hash of set) this.lru.delete(hash);
  }

  clear(): void {
    this.generation++;
    this.lru.clear();
    this.misses.clear();
    this.tags.clear();
  }

  /** Records held (misses not counted). */
  get size(): number {
    return this.lru.size;
  }

  /** Unknown hashes remembered. */
  get missCount(): number {
    return this.misses.size;
  }

  private untag(hash: string, tags: readonly string[]): void {
    for (const t of tags) {
      const set = this.tags.get(t);
      if (set === undefined) continue;
      set.delete(hash);
      if (set.size === 0) this.tags.delete(t);
    }
  }
}
