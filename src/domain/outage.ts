// How the read path lives through a database that cannot be reached. While the
// invalidation log is unreadable, caches are bypassed and every verification
// reads the database; when that read fails for want of a database, the record
// still held in memory answers (stale-if-error, at most the cache TTL old). Once
// one read has failed so, the next reads that can be answered from memory do not
// wait for the database at all (a silent one costs DB_QUERY_TIMEOUT_MS per read):
// for a few seconds they answer at once, then one read at a time probes it.
import { isDatabaseUnavailable } from "../storage/sql.js";

/** How long after a failed read the database is not tried for held records. */
const SKIP_MS = 2_000;

export class Outage {
  /** performance.now() until which held records answer without a read; 0 = no outage seen. */
  private skipUntil = 0;
  private probing = false;

  /** True while reads are skipped after a failure (the database is known to be unreachable). */
  get down(): boolean {
    return this.skipUntil !== 0 && performance.now() < this.skipUntil;
  }

  /** Reads through `read`, or answers `held` (a record the cache still holds) when the database is known to be unreachable. */
  async read<T>(held: T | undefined, read: () => Promise<T>): Promise<T> {
    if (held !== undefined && this.skipUntil !== 0 && (performance.now() < this.skipUntil || this.probing)) return held;
    const probe = held !== undefined && this.skipUntil !== 0;
    if (probe) this.probing = true;
    try {
      const r = await read();
      this.skipUntil = 0;
      return r;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      this.skipUntil = performance.now() + SKIP_MS;
      if (held !== undefined) return held;
      throw err;
    } finally {
      if (probe) this.probing = false;
    }
  }
}

const outages = new WeakMap<object, Outage>();

/** The outage state of one database pool (one per process; several in tests). */
export function outageOf(pool: object): Outage {
  let o = outages.get(pool);
  if (o === undefined) outages.set(pool, (o = new Outage()));
  return o;
}
