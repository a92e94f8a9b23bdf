// Key records for verification, through the LRU cache. A hot key costs no
// database read; an unknown hash is remembered as a miss for a short while.
import { MISS } from "../../cache/verification-cache.js";
import { findLiveKeyByHash } from "../../storage/keys.js";
import type { Deps } from "../deps.js";
import type { KeyRecord } from "./record.js";

export const keyTags = (k: KeyRecord): string[] => {
  const tags = [`key:${k.id}`, `api:${k.apiId}`, `ws:${k.workspaceId}`];
  if (k.identity) tags.push(`identity:${k.identity.id}`);
  return tags;
};

/** Loads in progress, per cache (one per process; several in tests). */
const inflightByCache = new WeakMap<object, Map<string, Promise<KeyRecord | undefined>>>();

export async function keyRecordByHash(deps: Deps, hash: string): Promise<KeyRecord | undefined> {
  const cached = deps.keyCache.get(hash);
  if (cached === MISS) return undefined;
  if (cached !== undefined) return cached;
  // Concurrent misses on the same hash share one database read, but only within
  // one cache generation: a read that started before a change must not answer a
  // verification that started after it.
  const slot = `${deps.keyCache.generation}|${hash}`;
  let inflight = inflightByCache.get(deps.keyCache);
  if (inflight === undefined) inflightByCache.set(deps.keyCache, (inflight = new Map()));
  const pending = inflight;
  let p = pending.get(slot);
  if (p === undefined) {
    p = load(deps, hash).finally(() => pending.delete(slot));
    pending.set(slot, p);
  }
  return p;
}

async function load(deps: Deps, hash: string): Promise<KeyRecord | undefined> {
  const generation = deps.keyCache.generation;
  const d = await findLiveKeyByHash(deps.pool, hash);
  // A change committed while we were reading must not be overwritten by our stale copy.
  if (deps.keyCache.generation !== generation) return d;
  if (d === undefined) {
    deps.keyCache.setMiss(hash);
    return undefined;
  }
  const { start, prefix, byteLength, createdAt, updatedAt, lastUsedAt, remaining, recoverable, ...record } = d;
  void start, prefix, byteLength, createdAt, updatedAt, lastUsedAt, remaining, recoverable;
  deps.keyCache.set(hash, record, keyTags(record));
  return record;
}
