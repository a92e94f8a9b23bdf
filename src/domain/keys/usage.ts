// Write-behind of last-used times: verifications only touch memory; a timer
// writes one batched UPDATE. A crash loses at most the last unflushed batch of
// lastUsedAt, which is approximate by contract. Credits are never written here.

export type FlushFn = (used: Map<string, number>) => Promise<void>;

export class UsageRecorder {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

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

  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      try {
        await this.flushFn(batch);
      } catch (err) {
        this.onError(err);
      }
    });
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
