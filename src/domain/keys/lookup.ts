// Key records for verification, through the LRU cache. A hot key costs no
// database read; an unknown hash is remembered as a miss for a short while.
import { MISS } from "../../cache/verification-cache.js";
import { Interner } from "../../core/intern.js";
import type { KeyDetails, KeyRecord } from "../../core/records.js";
import { findKeysForVerification } from "../../storage/keys.js";
import type { Deps } from "../deps.js";
import { outageOf } from "../outage.js";

/** Workspace and API ids, and the tags made of them: one copy each for all the keys cached (src/core/intern.ts). */
const shared = new Interner();

/**
 * A cached key's tags. Its own is its id as it is, not a `key:<id>` made for
 * it: that was one more string a key for the collector to mark, ~43 bytes of
 * heap (record-size.test.ts; 508 -> 465 a plain key). It cannot be taken for
 * another tag: a key id is `key_` and base58 (core/ids.ts), and every other tag
 * has a colon. The evict of a "key" invalidation (server/deps.ts) deletes it.
 */
export const keyTags = (k: KeyRecord): string[] => {
  const tags = [k.id, shared.of(`api:${k.apiId}`), shared.of(`ws:${k.workspaceId}`)];
  if (k.identity) tags.push(`identity:${k.identity.id}`);
  return tags;
};

/** A database read of one hash in progress, and the cache version it began at. */
interface Load {
  version: number;
  record: Promise<KeyRecord | undefined>;
}

/** Loads in progress by hash, per cache (one per process; several in tests). */
const inflightByCache = new WeakMap<object, Map<string, Load>>();
const loaderByCache = new WeakMap<object, HashLoader>();

/**
 * The cache's answer without a promise: the record, undefined for a hash
 * remembered as unknown, or null when only the database can tell
 * (keyRecordByHash). A hot verification then awaits nothing to find its key.
 */
export function cachedKeyRecord(deps: Deps, hash: string): KeyRecord | undefined | null {
  const cached = deps.keyCache.get(hash);
  if (cached === MISS) return undefined;
  return cached === undefined ? null : cached;
}

export async function keyRecordByHash(deps: Deps, hash: string): Promise<KeyRecord | undefined> {
  const cached = cachedKeyRecord(deps, hash);
  if (cached !== null) return cached;
  // Concurrent misses on the same hash share one database read, but only while
  // nothing was invalidated since it began: a read that started before a change
  // must not answer a verification that started after it.
  let inflight = inflightByCache.get(deps.keyCache);
  if (inflight === undefined) inflightByCache.set(deps.keyCache, (inflight = new Map()));
  let loader = loaderByCache.get(deps.keyCache);
  if (loader === undefined) loaderByCache.set(deps.keyCache, (loader = new HashLoader(deps)));
  const pending = inflight;
  const { keyCache } = deps;
  const shared = (): Promise<KeyRecord | undefined> => {
    const running = pending.get(hash);
    if (running !== undefined && running.version === keyCache.version) return running.record;
    const load: Load = {
      version: keyCache.version,
      record: loader.load(hash).finally(() => {
        if (pending.get(hash) === load) pending.delete(hash);
      }),
    };
    pending.set(hash, load);
    return load.record;
  };
  // A record held while the cache is bypassed answers when the database cannot be reached.
  return outageOf(deps.pool).read(deps.keyCache.stale(hash), shared);
}

/** Hashes read in one query at most. */
const MAX_BATCH = 200;
/** Batch reads running at once; further misses wait and are read together. */
const MAX_RUNNING = 4;

interface Waiter {
  resolve: (r: KeyRecord | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Reads uncached hashes in batches: the misses of one event-loop turn share one
 * query, and at most MAX_RUNNING queries run at once, so a flood of unknown keys
 * costs a bounded number of database reads however many requests carry them.
 */
class HashLoader {
  private readonly queue = new Map<string, Waiter[]>();
  private running = 0;
  private scheduled = false;

  constructor(private readonly deps: Deps) {}

  load(hash: string): Promise<KeyRecord | undefined> {
    return new Promise((resolve, reject) => {
      const waiting = this.queue.get(hash);
      if (waiting === undefined) this.queue.set(hash, [{ resolve, reject }]);
      else waiting.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.running < MAX_RUNNING && this.queue.size > 0) {
      const batch = new Map<string, Waiter[]>();
      for (const [hash, waiters] of this.queue) {
        batch.set(hash, waiters);
        this.queue.delete(hash);
        if (batch.size === MAX_BATCH) break;
      }
      this.running++;
      void this.read(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async read(batch: Map<string, Waiter[]>): Promise<void> {
    const { keyCache, pool } = this.deps;
    const version = keyCache.version;
    let found: Map<string, KeyDetails>;
    try {
      found = await findKeysForVerification(pool, [...batch.keys()]);
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
      return;
    }
    // A change committed while we were reading must not be overwritten by our stale
    // copy; changes to other keys (each createKey forgets its new hash) do not matter.
    for (const [hash, waiters] of batch) {
      const d = found.get(hash);
      const record = d === undefined ? undefined : toRecord(d);
      if (record === undefined) keyCache.setMissRead(version, hash);
      else keyCache.setRead(version, hash, record, keyTags(record));
      for (const w of waiters) w.resolve(record);
    }
  }
}

/** The cached part of a key's details, written out field by field: a rest pattern copies property by property through V8's runtime (see toDetails in storage/keys.ts). */
function toRecord(d: KeyDetails): KeyRecord {
  return {
    id: d.id,
    hash: d.hash,
    workspaceId: shared.of(d.workspaceId),
    apiId: shared.of(d.apiId),
    keyAuthId: shared.of(d.keyAuthId),
    name: d.name,
    meta: d.meta,
    metaSize: d.metaSize,
    expires: d.expires,
    enabled: d.enabled,
    limitedCredits: d.limitedCredits,
    refill: d.refill,
    lastRefillAt: d.refill === undefined ? undefined : d.lastRefillAt,
    identity: d.identity,
    ratelimits: d.ratelimits,
    permissions: d.permissions,
    roles: d.roles,
  };
}
