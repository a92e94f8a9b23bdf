// Credit spending with group commit. Verifications of the same key that arrive
// while its previous spend is still at the database wait and go together in the
// next statement: one round trip for the whole group. The balance is never held
// in memory: every decision is made by the database (a conditional UPDATE, or a
// row lock when the group does not fit), so it stays exact across instances, and
// every spend is committed before its verification is answered, so a crash
// cannot lose one.

import { spendCredits, spendEach } from "../../storage/keys.js";
import type { Pool } from "../../storage/sql.js";

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

export class CreditSpender {
  private readonly queues = new Map<string, Waiter[]>();
  private readonly busy = new Set<string>();

  constructor(private readonly pool: Pool) {}

  spend(keyId: string, cost: number): Promise<SpendResult> {
    return new Promise((resolve, reject) => {
      let q = this.queues.get(keyId);
      if (q === undefined) this.queues.set(keyId, (q = []));
      q.push({ cost, resolve, reject });
      if (!this.busy.has(keyId)) void this.drain(keyId);
    });
  }

  private async drain(keyId: string): Promise<void> {
    this.busy.add(keyId);
    try {
      for (;;) {
        const batch = this.queues.get(keyId);
        if (batch === undefined || batch.length === 0) break;
        this.queues.delete(keyId);
        try {
          this.settle(
            batch,
            await this.apply(
              keyId,
              batch.map((w) => w.cost),
            ),
          );
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.busy.delete(keyId);
      this.queues.delete(keyId);
    }
  }

  private async apply(keyId: string, costs: number[]): Promise<SpendResult[]> {
    const total = costs.reduce((a, b) => a + b, 0);
    // The whole group in one conditional statement when the balance covers it.
    const all = await spendCredits(this.pool, keyId, total);
    if (all.ok && all.remaining !== undefined) {
      // In order: each reports the balance after its own spend.
      let after = all.remaining + total;
      return costs.map((c) => {
        after -= c;
        return { ok: true, remaining: after };
      });
    }
    if (costs.length === 1) {
      return [{ ok: all.remaining === undefined, remaining: all.remaining }];
    }
    const each = await spendEach(this.pool, keyId, costs);
    if (each.unlimited) return costs.map(() => ({ ok: true, remaining: undefined }));
    return each.results;
  }

  private settle(batch: Waiter[], results: SpendResult[]): void {
    batch.forEach((w, i) => {
      w.resolve(results[i] as SpendResult);
    });
  }
}
