// Cache invalidation across processes. A change evicts this process's cached
// records at once, and is recorded in `cache_invalidations`; every instance (and
// the server, for changes the CLI makes) polls that table and evicts too. The
// poll interval bounds how long another instance may serve a stale record.
import type { Logger } from "../core/logger.js";
import { deleteInvalidationsBefore, insertInvalidation, lastInvalidationPk, listInvalidations } from "../storage/invalidations.js";
import type { Pool } from "../storage/sql.js";

/** What cache invalidation is about: a key (by id), an API, an identity, a root key (by hash). */
export type InvalidationKind = "key" | "api" | "identity" | "workspace" | "rootkey" | "role" | "permission" | "namespace";

export type Evict = (kind: InvalidationKind, id: string) => void;

/** How far back each poll looks again for rows that committed late. */
const RECENT_MS = 5_000;

export class Invalidations {
  private lastPk = 0;
  /** pk -> when applied, for the rows of the last few seconds. */
  private readonly applied = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private lastCleanup = 0;
  private lastOk = Date.now();
  private failing = false;

  constructor(
    private readonly pool: Pool,
    private readonly evict: Evict,
    private readonly log: Logger,
    /**
     * Called with true when this instance may be missing other instances'
     * changes (the log cannot be read), and with false when it has caught up:
     * the caller stops serving cached records meanwhile.
     */
    private readonly onStale: (stale: boolean) => void = () => undefined,
    private readonly staleAfterMs = 1_000,
  ) {}

  /** True while other instances' changes may be missed. */
  get stale(): boolean {
    return this.failing;
  }

  /**
   * Evicts here, then tells the others. The change itself is already committed,
   * so a failure to record it must not fail the request: it is logged, and this
   * instance stops trusting caches until the log works again.
   */
  async publish(kind: InvalidationKind, id: string): Promise<void> {
    this.evict(kind, id);
    try {
      await insertInvalidation(this.pool, kind, id, Date.now());
    } catch (err) {
      this.log.error({ err, kind, id }, "could not record a cache invalidation for other instances");
      if (!this.failing) {
        this.failing = true;
        this.onStale(true);
      }
    }
  }

  async start(everyMs: number): Promise<void> {
    if (this.timer) return;
    this.lastPk = await lastInvalidationPk(this.pool);
    this.timer = setInterval(() => void this.poll(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      // Auto-increment values are taken at insert but rows become visible at
      // commit, so a smaller pk can appear after a larger one: rows of the last
      // few seconds are read again, and a row is applied once.
      const now = Date.now();
      const rs = await listInvalidations(this.pool, this.lastPk, now - RECENT_MS, 5_000);
      for (const r of rs) {
        const pk = r.pk;
        if (this.applied.has(pk)) continue;
        this.applied.set(pk, now);
        this.evict(r.kind as InvalidationKind, r.cacheKey);
        if (pk > this.lastPk) this.lastPk = pk;
      }
      for (const [pk, at] of this.applied) if (at < now - 2 * RECENT_MS) this.applied.delete(pk);
      this.lastOk = Date.now();
      if (this.failing) {
        this.failing = false;
        this.onStale(false);
        this.log.info({}, "cache invalidation log readable again: caching resumed");
      }
      if (now - this.lastCleanup > 60_000) {
        this.lastCleanup = now;
        await deleteInvalidationsBefore(this.pool, now - 3_600_000);
      }
    } catch (err) {
      if (!this.failing && Date.now() - this.lastOk > this.staleAfterMs) {
        this.failing = true;
        this.onStale(true);
        this.log.warn({ err }, "cannot read the cache invalidation log: serving every verification from the database until it is back");
      } else if (!this.failing) {
        this.log.warn({ err }, "cache invalidation poll failed; retrying");
      }
    } finally {
      this.polling = false;
    }
  }
}
