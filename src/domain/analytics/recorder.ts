// Analytics events, recorded behind the hot path: a verification or a rate-limit
// check appends one small object to an array (no I/O, no string built); a timer
// writes what has gathered, raw rows and roll-ups in one transaction and one
// round trip (src/storage/analytics.ts). What a crash loses: the events of the
// current interval (1 s by default), plus everything held while the database
// was unreachable. A batch whose commit succeeded but whose answer was lost is
// written again on the next try: counted twice, never lost.
import type { RatelimitEvent, VerificationEvent } from "../../storage/analytics.js";

export type AnalyticsWrite = (verifications: VerificationEvent[], ratelimits: RatelimitEvent[]) => Promise<void>;

export interface AnalyticsRecorderOptions {
  everyMs?: number | undefined;
  /** Events per transaction (raw rows of both kinds together). */
  batchSize?: number | undefined;
  /** Most events held in memory; newer ones beyond it are dropped and counted. */
  maxPending?: number | undefined;
  /** Told how many events were dropped since it was last told (at most once per flush). */
  onDrop?: ((dropped: number) => void) | undefined;
}

export class AnalyticsRecorder {
  private verifications: VerificationEvent[] = [];
  private ratelimits: RatelimitEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private droppedSinceFlush = 0;
  /** Events dropped since start because maxPending were held. */
  dropped = 0;
  private readonly everyMs: number;
  private readonly batchSize: number;
  private readonly maxPending: number;

  constructor(
    private readonly write: AnalyticsWrite,
    private readonly onError: (err: unknown, pending: number) => void,
    private readonly opts: AnalyticsRecorderOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 1_000;
    // ~2,000 raw rows of ~300 bytes and their roll-ups: well under the 16 MB
    // max_allowed_packet of MariaDB's and MySQL 8's defaults, in one round trip.
    this.batchSize = opts.batchSize ?? 2_000;
    this.maxPending = opts.maxPending ?? 200_000;
  }

  /** Events waiting to be written. */
  get pendingRows(): number {
    return this.verifications.length + this.ratelimits.length;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.everyMs);
    this.timer.unref();
  }

  verification(e: VerificationEvent): void {
    if (this.full()) return;
    this.verifications.push(e);
  }

  ratelimit(e: RatelimitEvent): void {
    if (this.full()) return;
    this.ratelimits.push(e);
  }

  private full(): boolean {
    if (this.verifications.length + this.ratelimits.length < this.maxPending) return false;
    this.dropped++;
    this.droppedSinceFlush++;
    return true;
  }

  /** Writes everything pending now (waits for a flush already running first). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushNow());
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    if (this.droppedSinceFlush > 0) {
      this.opts.onDrop?.(this.droppedSinceFlush);
      this.droppedSinceFlush = 0;
    }
    while (this.pendingRows > 0) {
      const v = this.verifications.splice(0, this.batchSize);
      const r = this.ratelimits.splice(0, Math.max(0, this.batchSize - v.length));
      try {
        await this.write(v, r);
      } catch (err) {
        // Back in front, in order, for the next flush; what would exceed maxPending is dropped (newest first).
        this.verifications = v.concat(this.verifications);
        this.ratelimits = r.concat(this.ratelimits);
        const over = this.pendingRows - this.maxPending;
        if (over > 0) {
          const fromRatelimits = Math.min(over, this.ratelimits.length);
          this.ratelimits.length -= fromRatelimits;
          this.verifications.length -= over - fromRatelimits;
          this.dropped += over;
          this.opts.onDrop?.(over);
        }
        this.onError(err, this.pendingRows);
        return;
      }
    }
  }

  /** Stops the timer and writes what is pending. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
