// Analytics events, recorded behind the hot path: a verification or a rate-limit
// check appends one small object to an array (no I/O, no string built); a timer
// writes what has gathered, raw rows and roll-ups in one transaction and one
// round trip (src/storage/analytics.ts). What a crash loses: the events of the
// current interval (1 s by default), plus everything held while the database
// was unreachable. A batch whose commit succeeded but whose answer was lost is
// written again on the next try: counted twice, never lost.
import type { RatelimitEvent, VerificationEvent } from "../../storage/analytics.js";
import { flushUntil } from "../write-behind.js";

export type AnalyticsWrite = (verifications: VerificationEvent[], ratelimits: RatelimitEvent[]) => Promise<void>;

export interface AnalyticsRecorderOptions {
  everyMs?: number | undefined;
  /**
   * Most tuples per transaction: distinct (key, outcome, tags) of verifications
   * and (namespace, identifier) of rate-limit checks, the parts of a batch that
   * cost the most to write (each its own rows' text, each its roll-up rows).
   */
  batchSize?: number | undefined;
  /** Most events per transaction (raw rows of both kinds together), however few their tuples. */
  batchEvents?: number | undefined;
  /** Most bytes of SQL text per transaction, estimated (batchBytes). */
  batchBytes?: number | undefined;
  /** A batch starts no sooner than this after the last one was written, unless batchEvents events wait (a backlog) or at stop(). */
  minGapMs?: number | undefined;
  /** Most events held in memory; newer ones beyond it are dropped and counted. */
  maxPending?: number | undefined;
  /** Most bytes held in memory (estimated per event, heldBytes), likewise. */
  maxPendingBytes?: number | undefined;
  /** Told how many events were dropped since it was last told (at most once per flush). */
  onDrop?: ((dropped: number) => void) | undefined;
}

/**
 * What an event adds to its batch's SQL text, roughly: its raw row and its four
 * roll-up rows, each with the tags JSON, escaped (a quote becomes two or more
 * bytes). Tags are the only part a client sizes: 20 of 512 characters would make
 * one event ~100 KB, so batches are cut by bytes too, not only by count.
 */
const eventBytes = (tags: readonly string[]): number => {
  let t = 2;
  for (const tag of tags) t += tag.length + 3;
  return 5 * (300 + 2 * t);
};
const RATELIMIT_EVENT_BYTES = 5 * 900;

/**
 * What an event costs in memory while it waits, roughly: measured with Node 20,
 * 200,000 events of a hot verification held in an array, 179 bytes an event
 * without tags and 322 with two tags of 20 characters (the key's ids are the
 * cached record's strings, not copies). Not eventBytes: that is the SQL the event
 * will become, ~8 times more, and bounding memory by it dropped events under a
 * backlog of ~44,000 (a cold-key load of 3,500 verifications a second on a
 * database that took ~3,000 events a second) with ~8 MB actually held.
 */
const heldBytes = (tags: readonly string[]): number => {
  let t = 200;
  for (const tag of tags) t += 2 * tag.length + 40;
  return t;
};
/** A rate-limit check's event holds its identifier, the client's string. */
const ratelimitHeldBytes = (e: RatelimitEvent): number => 200 + 2 * e.identifier.length;

/**
 * Database errors a batch gets again however often it is sent (a value the
 * table refuses, a packet over max_allowed_packet): the batch is split until the
 * event causing it is alone, and that one is dropped and counted. Everything
 * else (the database unreachable, a table missing while it is migrated) is
 * waited out with the whole batch kept.
 */
const REFUSED_FOR_GOOD = new Set([1048, 1153, 1264, 1292, 1366, 1406, 3140]);
const refusedForGood = (err: unknown): boolean => REFUSED_FOR_GOOD.has((err as { errno?: number }).errno ?? 0);

/**
 * The distinct tuples of a batch being taken: a verification's key, outcome and
 * tags (the key's other columns follow from the key, the region is the
 * instance's), a rate-limit check's namespace and identifier. Found through one
 * Map per part: the event's strings are the cached record's, their hashes kept,
 * where a string joined from them would be made and hashed anew for each event:
 * with such strings in a Set, taking a batch was 0.75% of verifyJson's busy time
 * in a profile (BENCH_PROFILE), with these Maps 0.1%.
 */
class Tuples {
  size = 0;
  private readonly keys = new Map<string, Map<string, Set<string>>>();
  private readonly limits = new Map<string, Set<string>>();
  constructor(private readonly most: number) {}

  /** Counts the event's tuple, unless it is new and `most` are counted already: then false. */
  verification(e: VerificationEvent): boolean {
    let outcomes = this.keys.get(e.keyId);
    if (outcomes === undefined) {
      if (this.size >= this.most) return false;
      this.keys.set(e.keyId, (outcomes = new Map()));
    }
    let tags = outcomes.get(e.outcome);
    if (tags === undefined) {
      if (this.size >= this.most) return false;
      outcomes.set(e.outcome, (tags = new Set()));
    }
    return this.add(tags, e.tags.length === 0 ? "" : e.tags.join("\u0000"));
  }

  ratelimit(e: RatelimitEvent): boolean {
    let identifiers = this.limits.get(e.namespaceId);
    if (identifiers === undefined) {
      if (this.size >= this.most) return false;
      this.limits.set(e.namespaceId, (identifiers = new Set()));
    }
    return this.add(identifiers, e.identifier);
  }

  private add(set: Set<string>, last: string): boolean {
    if (set.has(last)) return true;
    if (this.size >= this.most) return false;
    set.add(last);
    this.size++;
    return true;
  }
}

/**
 * Events looked at and left for the next batch, at most, while one is taken.
 * Without it, a batch of keys seen once (each a tuple of its own) would look
 * through the whole backlog for events of its tuples that are not there.
 */
const LEFT_AT_MOST = 2_000;

/**
 * Takes out of `pending`, in order, the events a batch has room for: up to
 * `most`, within `batchBytes` (counted in `sum` with what the batch holds
 * already), each counted by `counted` (false: a new tuple the batch has no
 * room for, left in `pending` where it was). Taking events of the batch's
 * tuples from further on makes each tuple's roll-up rows serve more events.
 * With 1,000 keys each verified ~10 times a second (bench:ab
 * verifyCreditsMany), batches that stopped at their 500th tuple held 500-540
 * events, 0.91-0.96 tuples an event; taking from further on, 782 events and
 * 0.62 tuples an event, and the database's CPU a verification x0.85
 * (bench/README.md, "Analytics of many keys: a batch takes its tuples'
 * events from further on").
 */
function takeFrom<E>(
  pending: E[],
  most: number,
  batchBytes: number,
  sum: { bytes: number; held: number },
  counted: (e: E) => boolean,
  bytesOf: (e: E) => number,
  heldOf: (e: E) => number,
): E[] {
  const taken: E[] = [];
  // Events left are moved down to pending[0 .. left); the slots of those taken are removed at the end.
  let left = 0;
  let i = 0;
  for (; i < pending.length && taken.length < most; i++) {
    const e = pending[i] as E;
    const b = bytesOf(e);
    if (sum.bytes > 0 && sum.bytes + b > batchBytes) break;
    if (!counted(e)) {
      if (left === LEFT_AT_MOST) break;
      pending[left++] = e;
      continue;
    }
    sum.bytes += b;
    sum.held += heldOf(e);
    taken.push(e);
  }
  pending.splice(left, i - left);
  return taken;
}

export class AnalyticsRecorder {
  private verifications: VerificationEvent[] = [];
  private ratelimits: RatelimitEvent[] = [];
  private pendingBytes = 0;
  /**
   * While the database refuses a batch for good: the most events (and tuples)
   * of the next batch, half the refused one's, down to the one event to drop.
   * Infinity otherwise. Apart from batchSize: a refused batch of 2,000 events
   * of one tuple, halved as a tuple count (1,000, over batchSize), was taken
   * again whole, and refused again, without end.
   */
  private splitAt = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private droppedSinceFlush = 0;
  private writing = 0;
  /** When the last batch was written (performance.now()); -Infinity before the first. */
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  /** Set by stop(): what is left goes without pacing. */
  private stopping = false;
  /** Events dropped since start because maxPending were held. */
  dropped = 0;
  private readonly everyMs: number;
  private readonly batchSize: number;
  private readonly batchEvents: number;
  private readonly batchBytes: number;
  private readonly minGapMs: number;
  private readonly maxPending: number;
  private readonly maxPendingBytes: number;

  constructor(
    private readonly write: AnalyticsWrite,
    private readonly onError: (err: unknown, pending: number) => void,
    private readonly opts: AnalyticsRecorderOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 1_000;
    // At most 4 MB of SQL a batch (estimated, eventBytes): a quarter of MariaDB's
    // default max_allowed_packet (16 MB; MySQL 8's is 64 MB), in one round trip.
    // At most 500 tuples: a batch's SQL is built in one piece while every request
    // waits, and 2,000 verifications of keys seen once (the cold path) took 9-10 ms
    // to build, which was the cold path's p99 (bench/README.md, "Cold verification").
    // That is the cost of a batch's tuples (a key seen once is one); events that
    // share a tuple (a hot key's) add a short line each, up to batchEvents in all,
    // and the raw rows of such a batch send each tuple once (storage/analytics.ts,
    // TUPLES_A_ROW_AT_MOST).
    this.batchSize = opts.batchSize ?? 500;
    this.batchEvents = opts.batchEvents ?? 2_000;
    this.batchBytes = opts.batchBytes ?? 4 * 1024 * 1024;
    // Under load the recorder wrote on without pause, each batch holding what
    // gathered during the last write (~50 events at ~8,000 verifications a second
    // on a slow machine): a commit, its roll-up upserts and a round trip for every
    // ~50 rows. A batch that is not full now starts no sooner than 20 ms after the
    // last one was written, so more rows share each commit.
    // Measured with builds side by side (bench/README.md, "Analytics batches
    // paced"): the database's CPU a hot verification x0.78-0.82, keyhold's own
    // x0.84-0.96. A backlog (batchEvents events waiting) and stop() do not wait.
    // 50 ms since the batches of shared tuples may hold up to batchEvents: with
    // 2,000 and 50 ms against 500 and 20 (bench:ab, verifyJson, 12 rounds of 2 s,
    // each batch ~850 events instead of ~340), the database's CPU a verification
    // x0.81 and x0.85, req/s x1.02 and x1.08 (both caps 2,000 events in that
    // run); 500 and 50 ms changed nothing (the database's CPU x1.01, req/s x1.01).
    // A batch cut at its 500th tuple with fewer than batchEvents left waits too:
    // with many keys each seen a few times a second, one that went at once held
    // 782 events of 0.62 tuples an event; waiting, 1,136 of 0.44, and bench:ab
    // verifyCreditsMany req/s x1.212, the stores' CPU x0.747 (bench/README.md,
    // "Analytics of many keys"); the cold path's rate and p99 were unchanged.
    this.minGapMs = opts.minGapMs ?? 50;
    this.maxPending = opts.maxPending ?? 200_000;
    this.maxPendingBytes = opts.maxPendingBytes ?? 64 * 1024 * 1024;
  }

  /** Events waiting to be written. */
  get pendingRows(): number {
    return this.verifications.length + this.ratelimits.length;
  }

  /** Events not yet known to be written: those waiting and the batch being written. */
  get unwritten(): number {
    return this.pendingRows + this.writing;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.everyMs);
    this.timer.unref();
  }

  verification(e: VerificationEvent): void {
    if (this.full()) return;
    this.verifications.push(e);
    this.pendingBytes += heldBytes(e.tags);
  }

  ratelimit(e: RatelimitEvent): void {
    if (this.full()) return;
    this.ratelimits.push(e);
    this.pendingBytes += ratelimitHeldBytes(e);
  }

  private full(): boolean {
    if (this.verifications.length + this.ratelimits.length < this.maxPending && this.pendingBytes < this.maxPendingBytes) return false;
    this.dropped++;
    this.droppedSinceFlush++;
    return true;
  }

  /**
   * The next batch: up to batchSize tuples, batchEvents events (both at most
   * splitAt while a refused batch is split) and batchBytes, verifications
   * first; at least one event. An event of a new tuple past the tuples' cap
   * waits for the next batch, and the events after it of the batch's own
   * tuples still join this one.
   */
  private take(): { v: VerificationEvent[]; r: RatelimitEvent[]; held: number } {
    const most = Math.min(this.batchEvents, this.splitAt);
    const tuples = new Tuples(Math.min(this.batchSize, this.splitAt));
    const sum = { bytes: 0, held: 0 };
    const v = takeFrom(
      this.verifications,
      most,
      this.batchBytes,
      sum,
      (e) => tuples.verification(e),
      (e) => eventBytes(e.tags),
      (e) => heldBytes(e.tags),
    );
    const r = takeFrom(
      this.ratelimits,
      most - v.length,
      this.batchBytes,
      sum,
      (e) => tuples.ratelimit(e),
      () => RATELIMIT_EVENT_BYTES,
      ratelimitHeldBytes,
    );
    this.pendingBytes -= sum.held;
    return { v, r, held: sum.held };
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
      const wait = this.lastWriteAt + this.minGapMs - performance.now();
      if (wait > 0 && !this.stopping && this.pendingRows < this.batchEvents) {
        // Events keep gathering meanwhile; what was recorded so far is written after the pause.
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const { v, r, held } = this.take();
      this.writing = v.length + r.length;
      try {
        await this.write(v, r);
        this.lastWriteAt = performance.now();
        this.writing = 0;
        this.splitAt = Number.POSITIVE_INFINITY;
      } catch (err) {
        this.writing = 0;
        // Back in front for the next try (ahead of any events the batch looked past).
        this.verifications = v.concat(this.verifications);
        this.ratelimits = r.concat(this.ratelimits);
        this.pendingBytes += held;
        if (refusedForGood(err)) {
          if (v.length + r.length > 1) {
            this.splitAt = Math.max(1, Math.floor((v.length + r.length) / 2));
            continue;
          }
          // The one event the database will never take (back in front of its kind's
          // events): dropped, counted, and the rest go on.
          if (v.length === 1) this.verifications.shift();
          else this.ratelimits.shift();
          this.pendingBytes -= held;
          this.dropped++;
          this.opts.onDrop?.(1);
          this.onError(err, this.pendingRows);
          continue;
        }
        this.onError(err, this.pendingRows);
        return;
      }
    }
  }

  /**
   * Stops the timer and writes what is pending. With `until` (Unix ms), a batch
   * the database did not take is tried again every `retryMs` until then: a
   * shutdown during a short outage still writes its events.
   */
  async stop(until?: number, retryMs = 500): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.stopping = true;
    await flushUntil(
      () => this.flush(),
      () => this.pendingRows,
      until,
      retryMs,
    );
  }
}
