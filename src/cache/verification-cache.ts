// In-process caches for the hot paths: end-user key records and root keys, both
// keyed by the SHA-256 hash of the presented key. Records only, never counters:
// credits and rate-limit state are decided elsewhere. Unknown hashes are cached
// briefly as misses, in an LRU of their own: a flood of bad keys neither reaches
// the database twice for the same hash nor evicts the records of hot keys.
import { ShardedLru, ShardedMap, shardCount } from "./shards.js";

export const MISS = Symbol("miss");

/**
 * Invalidations remembered for reads in flight. A read that outlives this many
 * later invalidations does not cache (it is read again next time): at 5,000
 * createKey a second that is a read slower than about 0.8 s.
 */
const CHANGES_KEPT = 4_096;
export type Cached<T> = T | typeof MISS;

/**
 * A record's tags that the tag index holds (all but the group tags): the one tag
 * itself when it has one, as a key's id is for most keys. An array of all its
 * tags was two more objects for the collector to mark, ~72 bytes
 * (record-size.test.ts): a key cache of 400,000 plain keys took 232 MB and a
 * full gc() 181-187 ms with it, 203 MB and 144-157 ms without (scratch,
 * medians of 7, alternated).
 */
type Own = string | readonly string[] | undefined;
/** A record's group tags' cells (CacheOptions.groups), if it has any: it is gone once one of them is. */
type Groups = readonly Group[] | undefined;

/**
 * A group tag (CacheOptions.groups) shared by many records: an API's, a
 * workspace's. Each record holds its groups' cells; deleting the tag marks the
 * cell gone, and a record that holds a gone cell is dropped when it is next
 * read, so the invalidation is one write however many records share the tag.
 * The group's next record gets a new cell.
 */
class Group {
  /** Set by deleteTag and clear: then no longer the tag's cell in groupCells. */
  gone = false;
  /** Records held that hold this cell: the cell is forgotten with its last one. */
  members = 0;
  constructor(readonly tag: string) {}
}

const goneFrom = (groups: readonly Group[]): boolean => {
  for (const g of groups) if (g.gone) return true;
  return false;
};

export interface CacheOptions {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
  /** How long an unknown hash is remembered as unknown. */
  negativeTtlMs: number;
  /** How many unknown hashes are remembered at most (default 100,000: about 10 MB). */
  maxMisses?: number;
  /**
   * Prefixes of the tags that many records share (an API's `api:`, a
   * workspace's `ws:`): invalidated through a Group cell per tag rather than a
   * Set of every record's hash. Measured with 600,000 key records set into one
   * cache, each tagged with its key, its API and its workspace, the build before
   * and this one alternated: setting them all 2.8-3.3 s with the two Sets, 1.9-2.1
   * without; the heap after a full GC 333 MB against 282 (~85 bytes a record);
   * and each Set doubled its table in one piece at the same sizes as the cache's
   * own Maps: where the tables doubled, at ~262,144 records, two set()s of 53-66
   * and 120-161 ms with the Sets, one of 105-106 without; at ~524,288, 107-108
   * and 467-475 against 219-221. What is left of those pauses is the key tags'
   * Map and lru-cache's own. A record whose group was invalidated stays held
   * (counted in maxBytes, the first evicted if unused) until it is next read,
   * and is dropped then.
   */
  groups?: readonly string[];
  /**
   * The keys are SHA-256 digests (a key's hash, a root key's), or end in one:
   * a large cache is then cut into shards by a few of their characters
   * (shards.ts, shardOf), so that no table of the cache, the misses or the tag
   * index is rebuilt in one piece. Other keys (a namespace's name) could crowd
   * one shard, which would evict while the rest stand empty: such caches stay whole.
   */
  digestKeys?: boolean;
}

/** A bounded cache of records by key hash, with invalidation by hash and by tag (e.g. an API id). */
export class RecordCache<T extends object> {
  /** Sharded, as the tag index and the misses are, when large (shards.ts: no table of them rebuilt in one piece). */
  /**
   * Each record with its own tags and its group cells beside it in its slot
   * (ShardedLru's extras). Before, an entry object held the three, one more
   * object a record for the collector to mark, ~48 bytes (record-size.test.ts).
   */
  private readonly lru: ShardedLru<T, Own, Groups>;
  private readonly misses: ShardedLru<true>;
  /**
   * The hashes set with each tag: the hash itself while it is the only one (a
   * key's own tag, its id; most identities' tags), a Set from the second on.
   * Measured with 200,000 records shaped like a key's: 1,095 bytes of heap a
   * cached key, 410 of them its tags, 152 of those the Set of its own `key:` tag.
   */
  private readonly tags: ShardedMap<string | Set<string>>;
  /** The live cell of each group tag that a record held holds (CacheOptions.groups). */
  private readonly groupCells = new Map<string, Group>();
  private readonly groupPrefixes: readonly string[];
  private lastGroups: readonly Group[] | undefined;
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
    this.groupPrefixes = opts.groups ?? [];
    const maxMisses = opts.maxMisses ?? 100_000;
    const shards = opts.digestKeys === true ? shardCount(opts.maxEntries, opts.maxBytes) : 1;
    this.misses = new ShardedLru<true>({ max: maxMisses, ttl: opts.negativeTtlMs }, opts.digestKeys === true ? shardCount(maxMisses) : 1);
    this.tags = new ShardedMap(shards);
    this.lru = new ShardedLru<T, Own, Groups>(
      {
        max: opts.maxEntries,
        maxSize: opts.maxBytes,
        sizeCalculation: (value, key) => key.length + Math.max(1, this.sizeOf(value)),
        ...(opts.ttlMs > 0 ? { ttl: opts.ttlMs } : {}),
        dispose: (_value, key, reason, own, groups) => {
          if (reason === "evict") this.stats.evictions++;
          this.untag(key, own, groups);
        },
        extras: true,
      },
      shards,
    );
  }

  get(hash: string): Cached<T> | undefined {
    if (this.bypass) {
      this.stats.misses++;
      return undefined;
    }
    const slot = this.lru.slotOf(hash);
    if (slot >= 0) {
      const groups = this.lru.secondAt(slot);
      if (groups === undefined || !goneFrom(groups)) {
        this.stats.hits++;
        return this.lru.valueAt(slot);
      }
      // One of its groups was invalidated since it was set (deleteTag).
      this.lru.delete(hash);
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
    const slot = this.lru.slotOf(hash);
    if (slot < 0) return undefined;
    const groups = this.lru.secondAt(slot);
    if (groups !== undefined && goneFrom(groups)) {
      this.lru.delete(hash);
      return undefined;
    }
    return this.lru.valueAt(slot);
  }

  set(hash: string, value: T, tags: readonly string[] = []): void {
    if (this.bypass) return;
    this.misses.delete(hash);
    // Group cells counted first: a record this one replaces is disposed of (untag)
    // by the set below, and must not take a cell they share with it.
    let held: Group[] | undefined;
    let owned = 0;
    for (const t of tags) {
      if (!this.isGroup(t)) {
        owned++;
        continue;
      }
      let g = this.groupCells.get(t);
      if (g === undefined) this.groupCells.set(t, (g = new Group(t)));
      g.members++;
      (held ??= []).push(g);
    }
    const own = owned === 0 ? undefined : owned === tags.length ? (owned === 1 ? tags[0] : tags) : this.ownTags(tags, owned);
    const groups = held === undefined ? undefined : this.sharedGroups(held);
    this.lru.set(hash, value, own, groups);
    if (typeof own === "string") this.addTag(own, hash);
    else if (own !== undefined) for (const t of own) this.addTag(t, hash);
  }

  /**
   * The last record's list of cells again when this one's holds the same: the
   * records of one API and workspace share one array instead of one each (an
   * array grown by push holds room for 17 elements).
   */
  private sharedGroups(groups: Group[]): readonly Group[] {
    const last = this.lastGroups;
    if (last !== undefined && last.length === groups.length && last.every((g, i) => g === groups[i])) return last;
    this.lastGroups = groups.slice();
    return this.lastGroups;
  }

  private isGroup(tag: string): boolean {
    for (const p of this.groupPrefixes) if (tag.startsWith(p)) return true;
    return false;
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
    const group = this.groupCells.get(tag);
    if (group !== undefined) {
      // Its records are dropped as they are read (get, stale); the group's next one gets a new cell.
      group.gone = true;
      this.groupCells.delete(tag);
    }
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
    for (const g of this.groupCells.values()) g.gone = true;
    this.groupCells.clear();
  }

  /** Records held (misses not counted). */
  get size(): number {
    return this.lru.size;
  }

  /** How many shards its records are held in (1: one table, exactly LRU). */
  get shardCount(): number {
    return this.lru.shardCount;
  }

  /** Unknown hashes remembered. */
  get missCount(): number {
    return this.misses.size;
  }

  /** The tags of `tags` that are not group tags (`owned` of them): the one itself, or an array of exactly that many. */
  private ownTags(tags: readonly string[], owned: number): string | string[] {
    if (owned === 1) {
      for (const t of tags) if (!this.isGroup(t)) return t;
    }
    const own = new Array<string>(owned);
    let i = 0;
    for (const t of tags) if (!this.isGroup(t)) own[i++] = t;
    return own;
  }

  /** Files `hash` under tag `t` in the tag index. */
  private addTag(t: string, hash: string): void {
    const members = this.tags.get(t);
    if (members === undefined) this.tags.set(t, hash);
    else if (typeof members !== "string") members.add(hash);
    else if (members !== hash) this.tags.set(t, new Set([members, hash]));
  }

  /** Takes `hash` from under tag `t` in the tag index. */
  private removeTag(t: string, hash: string): void {
    const members = this.tags.get(t);
    if (members === undefined) return;
    if (typeof members === "string") {
      if (members === hash) this.tags.delete(t);
    } else {
      members.delete(hash);
      if (members.size === 0) this.tags.delete(t);
    }
  }

  private untag(hash: string, own: Own, groups: Groups): void {
    if (groups !== undefined) {
      for (const g of groups) {
        // Forgotten with its last record; a gone cell is no longer in the Map.
        if (--g.members === 0 && !g.gone) this.groupCells.delete(g.tag);
      }
    }
    if (typeof own === "string") this.removeTag(own, hash);
    else if (own !== undefined) for (const t of own) this.removeTag(t, hash);
  }
}
