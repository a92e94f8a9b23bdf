// Verification counts for the usage charts, kept in memory and written behind.
// The table: src/storage/migrations/0005_verification_usage.sql.

import type { UsageCount } from "../../storage/usage.js";

export type CountsFlushFn = (rows: UsageCount[]) => Promise<void>;

export interface VerificationCountsOptions {
  everyMs?: number | undefined;
  /** Rows per statement. */
  batchSize?: number | undefined;
  /** Most rows held in memory; counts for new rows beyond it are dropped. */
  maxPending?: number | undefined;
  /** Told how many counts were dropped since it was last told (at most once per flush). */
  onDrop?: ((dropped: number) => void) | undefined;
}

const MINUTE = 60_000;

/** The pending counts of one key, one API's totals, or one workspace's NOT_FOUND: per minute, per outcome. */
interface Scope {
  workspaceId: string;
  apiId: string;
  keyId: string;
  buckets: Map<number, Map<string, number>>;
}

/**
 * Write-behind of verification counts for the usage charts: a verification adds
 * one to a count in memory (no I/O); a timer adds them to the database in
 * batches. The counts sit in maps keyed by ids the verification already holds,
 * so the hot path builds no string. A batch that fails goes back into memory
 * and is tried again with the next flush, so an outage of the database delays
 * counts rather than losing them, up to maxPending rows. A crash loses what was
 * not yet flushed (one interval, or everything held during an outage); a flush
 * whose commit succeeded but whose answer was lost counts twice.
 */
export class VerificationCounts {
  // Key and API ids are unique across workspaces.
  private keys = new Map<string, Scope>();
  private apis = new Map<string, Scope>();
  private workspaces = new Map<string, Scope>();
  private rows = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private droppedSinceFlush = 0;
  /** Counts dropped since start because maxPending rows were held. */
  dropped = 0;
  private readonly everyMs: number;
  private readonly batchSize: number;
  private readonly maxPending: number;

  constructor(
    private readonly flushFn: CountsFlushFn,
    private readonly onError: (err: unknown, pendingRows: number) => void,
    private readonly opts: VerificationCountsOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 2_000;
    this.batchSize = opts.batchSize ?? 1_000;
    this.maxPending = opts.maxPending ?? 100_000;
  }

  /** Rows waiting to be written. */
  get pendingRows(): number {
    return this.rows;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.everyMs);
    this.timer.unref();
  }

  /** A verification of a key: counted for the key and for its API's total. */
  recordKey(workspaceId: string, apiId: string, keyId: string, at: number, outcome: string): void {
    const bucket = at - (at % MINUTE);
    this.add(this.keys, keyId, workspaceId, apiId, keyId, bucket, outcome, 1);
    this.add(this.apis, apiId, workspaceId, apiId, "", bucket, outcome, 1);
  }

  /** A verification that found no key of the workspace (NOT_FOUND). */
  recordWorkspace(workspaceId: string, at: number, outcome: string): void {
    this.add(this.workspaces, workspaceId, workspaceId, "", "", at - (at % MINUTE), outcome, 1);
  }

  private add(scopes: Map<string, Scope>, id: string, workspaceId: string, apiId: string, keyId: string, bucket: number, outcome: string, n: number): void {
    const scope = scopes.get(id);
    const outcomes = scope?.buckets.get(bucket);
    const count = outcomes?.get(outcome);
    if (outcomes !== undefined && count !== undefined) {
      outcomes.set(outcome, count + n);
      return;
    }
    if (this.rows >= this.maxPending) {
      this.dropped += n;
      this.droppedSinceFlush += n;
      return;
    }
    this.rows++;
    if (outcomes !== undefined) outcomes.set(outcome, n);
    else if (scope !== undefined) scope.buckets.set(bucket, new Map([[outcome, n]]));
    else scopes.set(id, { workspaceId, apiId, keyId, buckets: new Map([[bucket, new Map([[outcome, n]])]]) });
  }

  /** A row put back after a failed write. */
  private addRow(r: UsageCount): void {
    const [scopes, id] = r.keyId !== "" ? [this.keys, r.keyId] : r.apiId !== "" ? [this.apis, r.apiId] : [this.workspaces, r.workspaceId];
    this.add(scopes, id, r.workspaceId, r.apiId, r.keyId, r.bucketStart, r.outcome, r.count);
  }

  /** Everything pending, as rows; memory starts afresh. */
  private take(): UsageCount[] {
    const rows: UsageCount[] = [];
    for (const scopes of [this.keys, this.apis, this.workspaces]) {
      for (const { workspaceId, apiId, keyId, buckets } of scopes.values()) {
        for (const [bucketStart, outcomes] of buckets) {
          for (const [outcome, count] of outcomes) rows.push({ workspaceId, apiId, keyId, bucketStart, outcome, count });
        }
      }
    }
    this.keys = new Map();
    this.apis = new Map();
    this.workspaces = new Map();
    this.rows = 0;
    return rows;
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushNow());
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    if (this.droppedSinceFlush > 0) {
      this.opts.onDrop?.(this.droppedSinceFlush);
      this.droppedSinceFlush = 0;
    }
    if (this.rows === 0) return;
    const rows = this.take();
    for (let i = 0; i < rows.length; i += this.batchSize) {
      try {
        await this.flushFn(rows.slice(i, i + this.batchSize));
      } catch (err) {
        // The database is most likely down: keep this batch and the rest for the next flush.
        for (const r of rows.slice(i)) this.addRow(r);
        this.onError(err, this.rows);
        return;
      }
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
