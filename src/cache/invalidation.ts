// Cache invalidation across processes. A change evicts this process's cached
// records at once, and is recorded in `cache_invalidations`; every instance (and
// the server, for changes the CLI makes) polls that table and evicts too. The
// poll interval bounds how long another instance may serve a stale record.
import type { Pool } from "mysql2/promise";
import type { InvalidationKind, Logger } from "../domain/deps.js";
import { exec, rows } from "../storage/sql.js";

export type Evict = (kind: InvalidationKind, id: string) => void;

export class Invalidations {
  private lastPk = 0;
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

  /** Evicts here, then tells the others. */
  async publish(kind: InvalidationKind, id: string): Promise<void> {
    this.evict(kind, id);
    await exec(this.pool, "INSERT INTO cache_invalidations (kind, cache_key, created_at_m) VALUES (?, ?, ?)", [kind, id, Date.now()]);
  }

  async start(everyMs: number): Promise<void> {
    if (this.timer) return;
    const r = await rows<{ m: number | null }>(this.pool, "SELECT MAX(pk) AS m FROM cache_invalidations");
    this.lastPk = Number(r[0]?.m ?? 0);
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
      const rs = await rows(this.pool, "SELECT pk, kind, cache_key FROM cache_invalidations WHERE pk > ? ORDER BY pk LIMIT 1000", [
        this.lastPk,
      ]);
      for (const r of rs) {
        this.evict(String(r.kind) as InvalidationKind, String(r.cache_key));
        this.lastPk = Number(r.pk);
      }
      this.lastOk = Date.now();
      if (this.failing) {
        this.failing = false;
        this.onStale(false);
        this.log.info({}, "cache invalidation log readable again: caching resumed");
      }
      const now = Date.now();
      if (now - this.lastCleanup > 60_000) {
        this.lastCleanup = now;
        await exec(this.pool, "DELETE FROM cache_invalidations WHERE created_at_m < ?", [now - 3_600_000]);
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
