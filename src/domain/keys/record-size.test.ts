// keyRecordSize (what CACHE_MAX_BYTES counts) against the heap a cached key really
// takes: records shaped as the miss path makes them, each with fresh strings as a
// database row brings them, put in a RecordCache with their tags and the checks
// of limits their first verification keeps, the heap read before and after, once
// collecting frees no more.
import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { RecordCache } from "../../cache/verification-cache.js";
import { Interner } from "../../core/intern.js";
import { type KeyRecord, keyRecordSize, NONE, type RatelimitConfig } from "../../core/records.js";
import { keyTags } from "./lookup.js";
import { autoLimits } from "./verify.js";

setFlagsFromString("--expose-gc");
// Swept at once: with concurrent sweeping, heapUsed read just after gc() may
// still count pages the sweeper has not reached, more so on a busy machine.
setFlagsFromString("--no-concurrent-sweeping");
const gc = runInNewContext("gc") as () => void;

/**
 * The heap in use once collecting again frees no more than 64 KB (at most 10
 * collections): a worker that ran other test files first may hold garbage that
 * one or two collections leave (a CI run read a heap 34 MB smaller after
 * caching 20,000 keys than before).
 */
function settledHeap(): number {
  gc();
  let used = process.memoryUsage().heapUsed;
  for (let i = 0; i < 10; i++) {
    gc();
    const now = process.memoryUsage().heapUsed;
    if (used - now < 64 * 1024) return now;
    used = now;
  }
  return used;
}

/** A copy of `s` of its own, as each database row brings its strings. */
const fresh = (s: string): string => Buffer.from(s).toString();
/** The workspace, API and key-space ids shared, as the miss path's toRecord shares them (lookup.ts). */
const shared = new Interner();
const id = (prefix: string) => fresh(`${prefix}${randomBytes(12).toString("hex").slice(0, 16)}`);
const limit = (): RatelimitConfig => ({ id: id("rl_"), name: fresh("requests"), limit: 100, duration: 60_000, autoApply: true });
const SHAPES = ["plain", "permissions and roles", "two limits", "an identity", "a name and meta"] as const;
type Shape = (typeof SHAPES)[number];

function record(shape: Shape, i: number): KeyRecord {
  const metaText = shape === "a name and meta" ? JSON.stringify({ plan: "pro", userId: `user_${i}`, tier: 3, flags: ["a", "b"] }) : undefined;
  return {
    id: id("key_"),
    hash: fresh(randomBytes(32).toString("base64")),
    workspaceId: shared.of(fresh("ws_AAAAAAAAAAAAAAAA")),
    apiId: shared.of(fresh("api_BBBBBBBBBBBBBBBB")),
    keyAuthId: shared.of(fresh("ks_CCCCCCCCCCCCCCCC")),
    name: shape === "a name and meta" ? fresh(`customer key ${i}`) : undefined,
    meta: metaText === undefined ? undefined : (JSON.parse(fresh(metaText)) as Record<string, unknown>),
    metaSize: metaText?.length ?? 0,
    expires: undefined,
    enabled: true,
    limitedCredits: false,
    refill: undefined,
    // As toRecord (lookup.ts) leaves it in a record without a refill.
    lastRefillAt: undefined,
    identity:
      shape === "an identity"
        ? { id: id("id_"), externalId: fresh(`user_${i}`), meta: JSON.parse(fresh('{"plan":"pro"}')) as Record<string, unknown>, ratelimits: [limit()] }
        : undefined,
    // Empty lists as the miss path leaves them (storage/keys.ts): the one shared NONE.
    ratelimits: shape === "two limits" ? [limit(), limit()] : NONE,
    permissions: shape === "permissions and roles" ? ["api.*.verify_key", "documents.read", "documents.write", "billing.read", "admin"].map(fresh) : NONE,
    roles: shape === "permissions and roles" ? ["reader", "writer"].map(fresh) : NONE,
  };
}

describe("keyRecordSize", () => {
  /**
   * The heap 20,000 records of `shape` take, a key, once cached, and what
   * keyRecordSize made of them. Other files of this worker end their work
   * asynchronously (pools closing, timers running out), and what they free
   * during the reading comes off it: a CI run read -1,662 bytes a key (the heap
   * 33 MB smaller after caching 20,000 keys than before, settledHeap
   * notwithstanding). A reading below nothing cannot be the records', and is
   * taken again, at most twice more; any other is the one asserted.
   */
  function measure(shape: Shape): { estimate: number; heap: number } {
    for (let attempt = 1; ; attempt++) {
      const m = measureOnce(shape);
      if (m.heap > 0 || attempt === 3) return m;
    }
  }

  function measureOnce(shape: Shape): { estimate: number; heap: number } {
    const N = 20_000;
    // Made before the first reading: the cache's own arrays (sized by its entry bound) and the shared ids.
    // Set up as the key cache is (server/deps.ts): `api:` and `ws:` group tags, digest shards; room for all N whatever a shard's rounding.
    const cache = new RecordCache<KeyRecord>(
      { maxEntries: 2 * N, maxBytes: Number.MAX_SAFE_INTEGER, ttlMs: 3_600_000, negativeTtlMs: 2_000, groups: ["api:", "ws:"], digestKeys: true },
      keyRecordSize,
    );
    const warm = record(shape, -1);
    cache.set(warm.hash, warm, keyTags(warm));
    cache.delete(warm.hash);
    const before = settledHeap();
    let estimate = 0;
    for (let i = 0; i < N; i++) {
      const r = record(shape, i);
      cache.set(r.hash, r, keyTags(r));
      // And what its first verification keeps with it (the checks of its limits, verify.ts): a key is cached by a verification.
      autoLimits(r);
      estimate += keyRecordSize(r) + r.hash.length;
    }
    const heap = (settledHeap() - before) / N;
    // The cache is used after the reading, so that it is not collected before it.
    expect(cache.size).toBe(N);
    return { estimate: estimate / N, heap };
  }

  it.each(SHAPES)("is within 0.85-1.4 times the heap a cached key takes: %s", (shape) => {
    const { estimate, heap } = measure(shape);
    const ratio = estimate / heap;
    expect(ratio, `estimate ${Math.round(estimate)} bytes a key, heap ${Math.round(heap)}`).toBeGreaterThanOrEqual(0.85);
    expect(ratio, `estimate ${Math.round(estimate)} bytes a key, heap ${Math.round(heap)}`).toBeLessThanOrEqual(1.4);
  });
});
