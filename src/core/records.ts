// The shapes a key takes inside keyhold. KeyRecord is what verification needs and
// what the verification cache holds: configuration only, never a counter.

export interface RatelimitConfig {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface IdentityRecord {
  id: string;
  externalId: string;
  meta: Record<string, unknown> | undefined;
  ratelimits: readonly RatelimitConfig[];
}

export interface Refill {
  amount: number;
  /** undefined = daily; 1-31 = monthly on that day. */
  day: number | undefined;
}

export interface KeyRecord {
  id: string;
  hash: string;
  workspaceId: string;
  apiId: string;
  keyAuthId: string;
  name: string | undefined;
  meta: Record<string, unknown> | undefined;
  /** Serialised meta, for sizing the cache entry. */
  metaSize: number;
  expires: number | undefined;
  enabled: boolean;
  /** True when the key has a credit balance (the balance itself is never cached). */
  limitedCredits: boolean;
  refill: Refill | undefined;
  /**
   * When the last refill ran (or the key was created), Unix ms; undefined in a
   * cached record without a refill (toRecord in domain/keys/lookup.ts). A time
   * in ms is no small integer, so a field that only ever held numbers kept each
   * one in a heap number of its own, 16 bytes and one more object a record for
   * the collector to mark; holding undefined too, the field takes any value and
   * a key without a refill holds none.
   */
  lastRefillAt: number | undefined;
  identity: IdentityRecord | undefined;
  ratelimits: readonly RatelimitConfig[];
  permissions: readonly string[];
  roles: readonly string[];
}

/**
 * One frozen empty list for every record without roles, permissions or limits
 * (most keys): three empty arrays of its own were ~90 bytes of a cached key's
 * heap (680 -> 592 bytes a plain key in record-size.test.ts's model).
 * Frozen, so that a write to it throws rather than reach every record.
 */
export const NONE: readonly never[] = Object.freeze([]);

/** Everything getKey/listKeys return about a key. */
export interface KeyDetails extends KeyRecord {
  start: string;
  prefix: string | undefined;
  byteLength: number;
  createdAt: number;
  updatedAt: number | undefined;
  lastUsedAt: number;
  remaining: number | undefined;
  recoverable: boolean;
  /** Always read from the database here, refill or not. */
  lastRefillAt: number;
}

/**
 * What a cached key costs in heap, roughly: what CACHE_MAX_BYTES counts (the
 * cache adds the hash it is filed under). Measured on records shaped as the
 * miss path makes them (ids shared as lookup.ts shares them, empty lists as
 * NONE), 20,000 of a shape in a RecordCache set up as the key cache is (its
 * group tags, its shards) with their tags, `gc()` before and after, on Node 20
 * (src/domain/keys/record-size.test.ts): 413 bytes of heap a plain key with its
 * hash, 730 with five permissions and two roles, 1,171 with two limits, 1,283
 * with an identity (a one-field meta, one limit), 568 with a name and a
 * four-field meta (the two with limits once the checks their first
 * verification keeps are made: keptChecksSize below). What came off since
 * 2026-12-03, a plain key: its own tag held as one string rather than an array
 * of its tags, 579 -> 507 bytes (158 with an identity); that tag the key's id
 * itself rather than a `key:<id>` made for it, and no heap number for
 * lastRefillAt in a key without a refill, 508 -> 449; the cache's entry object
 * gone (its tags and group cells beside the record in its slot, shards.ts),
 * 449 -> 413. End to end a plain key took 798-805 bytes before NONE
 * (docs/caching.md), ~120 more than the model then (680): the base was set for
 * that, and is 165 lower for the changes since. So this counts 1.15-1.35 of
 * the model's heap; the estimate before (a base of 400, a meta at its JSON's
 * length) counted ~0.55 of a plain key's heap end to end, so a cache bounded
 * by bytes took up to twice what it was set to.
 */
export const keyRecordSize = (k: KeyRecord): number =>
  515 +
  Math.ceil(k.metaSize * 2.5) +
  (k.name === undefined ? 0 : k.name.length + 24) +
  k.permissions.reduce((n, p) => n + p.length + 32, 0) +
  k.roles.reduce((n, r) => n + r.length + 32, 0) +
  (k.ratelimits.length + (k.identity?.ratelimits.length ?? 0)) * 140 +
  keptChecksSize(k) +
  (k.identity ? 300 + k.identity.externalId.length + Math.ceil(JSON.stringify(k.identity.meta ?? {}).length * 2.5) : 0);

/**
 * What a record's first verification keeps with it: the limiter's checks of its
 * auto-applied limits (autoLimits in domain/keys/verify.ts), ~200 bytes for
 * their lists and ~150 and a limit's name's length a check, ~80 more for an
 * identity's slot tag. Counted whether or not it has been made: a key is
 * cached by a verification. Measured as above: +501 bytes of heap for two
 * limits (1,404 in all), +399 for an identity's one (1,556).
 */
function keptChecksSize(k: KeyRecord): number {
  let n = 0;
  for (const l of k.ratelimits) if (l.autoApply) n += 150 + l.name.length;
  for (const l of k.identity?.ratelimits ?? NONE) if (l.autoApply) n += 150 + l.name.length;
  return n === 0 ? 0 : 200 + n + (k.identity === undefined ? 0 : 80);
}
