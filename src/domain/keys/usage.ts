// Write-behind of last-used times: verifications only touch memory; a timer
// writes one batched UPDATE. A crash loses at most the last unflushed batch of
// lastUsedAt, which is approximate by contract; a batch the database refuses is
// kept for the next flush. Credits are never written here.

import { flushUntil } from "../write-behind.js";

export type FlushFn = (used: Map<string, number>) => Promise<void>;

export class UsageRecorder {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private writing = 0;

  constructor(
    private readonly flushFn: FlushFn,
    private readonly onError: (err: unknown) => void,
    private readonly everyMs = 1_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.everyMs);
    this.timer.unref();
  }

  record(keyId: string, at: number): void {
    this.pending.set(keyId, at);
  }

  /** Keys whose last-used time is not known to be written: waiting, or in the batch being written. */
  get size(): number {
    return this.pending.size + this.writing;
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      this.writing = batch.size;
      try {
        await this.flushFn(batch);
        this.writing = 0;
      } catch (err) {
        this.writing = 0;
        // Back for the next flush, unless a later use of the key was recorded meanwhile.
        for (const [id, at] of batch) if ((this.pending.get(id) ?? -1) < at) this.pending.set(id, at);
        this.onError(err);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is pending; with `until` (Unix ms), tried again every `retryMs` until then while the database refuses. */
  async stop(until?: number, retryMs = 500): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await flushUntil(
      () => this.flush(),
      () => this.pending.size,
      until,
      retryMs,
    );
  }
}
