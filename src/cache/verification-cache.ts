// In-process caches for the hot paths: end-user key records and root keys, both
// keyed by the SHA-256 hash of the presented key. Records only, never counters:
// credits and rate-limit state are decided elsewhere. Unknown hashes are cached
// briefly as misses, in an LRU of their own: a flood of bad keys neither reaches
// the database twice for the same hash nor evicts the records of hot keys.
import { LRUCache } from "lru-cache";

export const MISS = Symbol("miss");

/**
 * Invalidations remembered for reads in flight. A read that outlives this many
 * later invalidations does not cache (it is read again next time): at 5,000
 * createKey a second that is a read slower than about 0.8 s.
 */
const CHANGES_KEPT = 4_096;
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
  /**
   * The hashes set with each tag: the hash itself while it is the only one (a
   * key's own `key:` tag, most identities' tags), a Set from the second on.
   * Measured with 200,000 records shaped like a key's: 1,095 bytes of heap a
   * cached key, 410 of them its tags, 152 of those the Set of its own `key:` tag.
   */
  private readonly tags = new Map<string, string | Set<string>>();
  /**
   * Counts invalidations. A database read takes it (`version`) before it starts,
   * and caches what it found only if nothing that could concern that record was
   * invalidated meanwhile (`unchangedSince`): its hash, one of its tags, or
   * everything. Other invalidations do not stop it. (A single counter for all of
   * them did: under a steady stream of createKey, each of which forgets the new
   * key's hash, a read of a cold key almost never finished without one, so the
   * key was read from the database on every verification and, when the database
   * then went away, there was no record held to answer with.)
   */
  private seq = 0;
  /** Reads begun before this may not cache: what was invalidated then is no longer remembered. */
  private floor = 0;
  /** `h<hash>` or `t<tag>` -> the seq of its last invalidation, the last CHANGES_KEPT of them, oldest first. */
  private readonly changed = new Map<string, number>();
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
      const members = this.tags.get(t);
      if (members === undefined) this.tags.set(t, hash);
      else if (typeof members !== "string") members.add(hash);
      else if (members !== hash) this.tags.set(t, new Set([members, hash]));
    }
  }

  setMiss(hash: string): void {
    if (this.bypass) return;
    this.misses.set(hash, true);
  }

  /** Caches a record read from the database by a read begun at `version`, unless it may be stale (`unchangedSince`). */
  setRead(version: number, hash: string, value: T, tags: readonly string[] = []): void {
    if (this.unchangedSince(version, hash, tags)) this.set(hash, value, tags);
  }

  /** Remembers a hash the database did not know, by a read begun at `version`, unless it may be stale. */
  setMissRead(version: number, hash: string): void {
    if (this.unchangedSince(version, hash)) this.setMiss(hash);
  }

  /** What a database read takes before it starts, for `unchangedSince`. */
  get version(): number {
    return this.seq;
  }

  /**
   * True when a read begun at `version` may cache what it found for this hash
   * (a record with these tags, or a miss with none): neither the hash, nor one of
   * the tags, nor the whole cache was invalidated since it began.
   */
  unchangedSince(version: number, hash: string, tags: readonly string[] = []): boolean {
    if (version === this.seq) return true;
    if (version < this.floor) return false;
    if ((this.changed.get(`h${hash}`) ?? 0) > version) return false;
    for (const t of tags) if ((this.changed.get(`t${t}`) ?? 0) > version) return false;
    return true;
  }

  private noteChange(what: string): void {
    this.seq++;
    this.changed.delete(what);
    this.changed.set(what, this.seq);
    if (this.changed.size > CHANGES_KEPT) {
      const [oldest, at] = this.changed.entries().next().value as [string, number];
      this.changed.delete(oldest);
      this.floor = at;
    }
  }

  delete(hash: string): void {
    this.noteChange(`h${hash}`);
    this.lru.delete(hash);
    this.misses.delete(hash);
  }

  /** Drops every record set with this tag (a key id, an API id, an identity id...). */
  deleteTag(tag: string): void {
    this.noteChange(`t${tag}`);
    const members = this.tags.get(tag);
    if (members === undefined) return;
    this.tags.delete(tag);
    if (typeof members === "string") this.lru.delete(members);
    else for (const hash of members) this.lru.delete(hash);
  }

  clear(): void {
    this.seq++;
    this.floor = this.seq;
    this.changed.clear();
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
      const members = this.tags.get(t);
      if (members === undefined) continue;
      if (typeof members === "string") {
        if (members === hash) this.tags.delete(t);
      } else {
        members.delete(hash);
        if (members.size === 0) this.tags.delete(t);
      }
    }
  }
}
