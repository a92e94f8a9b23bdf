// Credit spending with group commit. Verifications of the same key that arrive
// while its previous spend is still at the database wait and go together in the
// next statement: one round trip for the whole group. The groups of different
// keys that gather in one event-loop turn go together too, as one transaction
// in one round trip: their rows locked and read, then one conditional UPDATE of
// them all (spendCreditsOfKeys). The
// balance is never held in memory: every decision is made by the database (a
// conditional UPDATE, or a row lock when the group does not fit), so it stays
// exact across instances, and every spend is committed before its verification
// is answered, so a crash cannot lose one.

import { type KeySpend, spendCredits, spendCreditsOfKeys, spendEach } from "../../storage/keys.js";
import { lostRowLock, type Pool } from "../../storage/sql.js";

export interface SpendResult {
  ok: boolean;
  /** The balance after this spend (or unchanged when refused); undefined = unlimited. */
  remaining: number | undefined;
}

interface Waiter {
  cost: number;
  resolve: (r: SpendResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Batches at the database at once. Measured before batches of keys (one
 * statement and commit a key at a time, up to the pool's 20 at once): with
 * every verification on a key of its own among 1,000 keys with credits,
 * keyhold spent 131-208 µs of CPU a verification against 53-89 µs for one hot
 * key with credits (bench/README.md, "Credits of many keys"). More than one
 * batch may be out, so that a batch waiting for a row lock (another instance's
 * change of one of its keys) holds up only the keys in it for a while.
 */
const BATCHES_AT_ONCE = 4;

/** Keys a batch at most: its SQL stays small (~150 bytes a key), its locks few. */
const KEYS_A_BATCH = 200;

export class CreditSpender {
  /** Spends waiting for their key's next group, by key. */
  private readonly waiting = new Map<string, Waiter[]>();
  /** Keys with a group at the database: their next group waits for its answer. */
  private readonly atDatabase = new Set<string>();
  private batches = 0;
  private scheduled = false;

  constructor(private readonly pool: Pool) {}

  spend(keyId: string, cost: number): Promise<SpendResult> {
    return new Promise((resolve, reject) => {
      let q = this.waiting.get(keyId);
      if (q === undefined) this.waiting.set(keyId, (q = []));
      q.push({ cost, resolve, reject });
      // The turn's other spends (of this key and of others) go with it: sent when the turn ends.
      if (!this.scheduled && !this.atDatabase.has(keyId) && this.batches < BATCHES_AT_ONCE) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.send();
        });
      }
    });
  }

  /** Sends the groups of every waiting key not at the database, as batches, while fewer than BATCHES_AT_ONCE are out. */
  private send(): void {
    while (this.batches < BATCHES_AT_ONCE) {
      const batch: Array<[string, Waiter[]]> = [];
      for (const entry of this.waiting) {
        if (this.atDatabase.has(entry[0])) continue;
        batch.push(entry);
        if (batch.length >= KEYS_A_BATCH) break;
      }
      if (batch.length === 0) return;
      for (const [keyId] of batch) {
        this.waiting.delete(keyId);
        this.atDatabase.add(keyId);
      }
      this.batches++;
      void this.settleBatch(batch).finally(() => {
        this.batches--;
        // What gathered meanwhile goes now, without waiting for the turn's end.
        if (this.waiting.size > 0) this.send();
      });
    }
  }

  /**
   * A batch decided and answered, each key let go (its next group may go) as
   * soon as its own group is answered: one key as its own statement, several in
   * one transaction. Never rejects.
   */
  private async settleBatch(batch: Array<[string, Waiter[]]>): Promise<void> {
    if (batch.length === 1) {
      // Not settleAlone: the hot key's path, with one await less.
      const [keyId, waiters] = batch[0] as [string, Waiter[]];
      await this.settleGroup(keyId, waiters);
      this.atDatabase.delete(keyId);
      return;
    }
    let balances: Array<number | undefined>;
    try {
      balances = await spendCreditsOfKeys(
        this.pool,
        batch.map(([keyId, waiters]): KeySpend => ({ keyId, cost: totalOf(waiters) })),
      );
    } catch (err) {
      if (lostRowLock(err)) {
        // The batch kept losing a row lock, which is one key's: on a Galera cluster
        // another node's spends of one of its keys certified first at every attempt,
        // or another transaction held a row past the lock wait. Each key is then
        // decided on its own, so that only the contended key can fail; as a batch,
        // every key in it was refused (a 503) for the one.
        await Promise.all(batch.map(([keyId, waiters]) => this.settleAlone(keyId, waiters)));
        return;
      }
      for (const [keyId, waiters] of batch) {
        for (const w of waiters) w.reject(err);
        this.atDatabase.delete(keyId);
      }
      return;
    }
    // A group the balance did not cover, or of a key that became unlimited, is
    // decided on its own, as a lone key's is; the batch's other keys need not
    // wait for it (a key out of credits and still asked for would otherwise
    // hold up every key batched with it, each time).
    const alone: Promise<void>[] = [];
    batch.forEach(([keyId, waiters], i) => {
      const after = balances[i];
      if (after === undefined) {
        alone.push(this.settleAlone(keyId, waiters));
        return;
      }
      settle(
        waiters,
        inOrder(
          after,
          waiters.map((w) => w.cost),
        ),
      );
      this.atDatabase.delete(keyId);
    });
    if (alone.length === 0) return;
    if (this.waiting.size > 0) this.send();
    await Promise.all(alone);
  }

  /** A key of a batch decided on its own, then let go (its next group may go); never rejects. */
  private async settleAlone(keyId: string, waiters: Waiter[]): Promise<void> {
    await this.settleGroup(keyId, waiters);
    this.atDatabase.delete(keyId);
  }

  /** One key's group, decided by the database and answered; never rejects. */
  private async settleGroup(keyId: string, waiters: Waiter[]): Promise<void> {
    try {
      settle(
        waiters,
        await this.apply(
          keyId,
          waiters.map((w) => w.cost),
        ),
      );
    } catch (err) {
      for (const w of waiters) w.reject(err);
    }
  }

  private async apply(keyId: string, costs: number[]): Promise<SpendResult[]> {
    const total = costs.reduce((a, b) => a + b, 0);
    // The whole group in one conditional statement when the balance covers it.
    const all = await spendCredits(this.pool, keyId, total);
    if (all.ok && all.remaining !== undefined) return inOrder(all.remaining, costs);
    if (costs.length === 1) {
      return [{ ok: all.remaining === undefined, remaining: all.remaining }];
    }
    const each = await spendEach(this.pool, keyId, costs);
    if (each.unlimited) return costs.map(() => ({ ok: true, remaining: undefined }));
    return each.results;
  }
}

const totalOf = (waiters: readonly Waiter[]): number => waiters.reduce((a, w) => a + w.cost, 0);

/** A group spent whole, `after` left: in order, each reports the balance after its own spend. */
function inOrder(after: number, costs: readonly number[]): SpendResult[] {
  let left = after + costs.reduce((a, c) => a + c, 0);
  return costs.map((c) => {
    left -= c;
    return { ok: true, remaining: left };
  });
}

function settle(waiters: readonly Waiter[], results: readonly SpendResult[]): void {
  waiters.forEach((w, i) => {
    w.resolve(results[i] as SpendResult);
  });
}
