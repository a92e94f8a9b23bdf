// Credit spends of different keys that gather in one event-loop turn go to the
// database as one transaction in one round trip: their rows locked and read,
// then one conditional UPDATE of them all (CreditSpender, spendCreditsOfKeys).
// Each key's balance stays exact: what the batch could not cover is decided key
// by key, as before.
import { format, type RowDataPacket, type SqlValue } from "mysql2";
import { describe, expect, it, onTestFinished } from "vitest";
import { CreditSpender } from "../../src/domain/keys/credits.js";
import { readCredits, spendCreditsOfKeys } from "../../src/storage/keys.js";
import type { Pool } from "../../src/storage/sql.js";
import { api, key } from "../fixtures.js";
import { useHarness } from "../harness.js";

/** The pool, noting the text (and the values) of every query and execute sent through it or its connections. */
function noting(pool: Pool): { pool: Pool; sent: string[]; values: unknown[] } {
  const sent: string[] = [];
  const values: unknown[] = [];
  const note =
    (fn: (...a: unknown[]) => unknown) =>
    (sql: unknown, ...rest: unknown[]) => {
      sent.push(typeof sql === "string" ? sql : String((sql as { sql?: unknown }).sql));
      values.push(rest[0]);
      return fn(sql, ...rest);
    };
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver) as (...a: unknown[]) => unknown;
        if (prop === "query" || prop === "execute") return note(v.bind(t));
        if (prop === "getConnection") return async () => wrap((await v.call(t)) as object);
        return v;
      },
    });
  return { pool: wrap(pool), sent, values };
}

const deadlock = () =>
  Object.assign(new Error("Deadlock found when trying to get lock; try restarting transaction"), { code: "ER_LOCK_DEADLOCK", errno: 1213 });

describe("credit spends of many keys, batched", () => {
  const h = useHarness();

  async function keysWithCredits(n: number, remaining: number): Promise<string[]> {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await key(h, rk, apiId, { credits: { remaining } })).keyId);
    return ids;
  }

  it("spends of ten keys in one turn are one transaction of one locking read and one UPDATE, in one round trip, each key's balance reported", async () => {
    const ids = await keysWithCredits(10, 5);
    const { pool, sent } = noting(h.db.pool);
    const spender = new CreditSpender(pool);
    const results = await Promise.all(ids.map((id, i) => spender.spend(id, (i % 3) + 1)));
    expect(results).toEqual(ids.map((_, i) => ({ ok: true, remaining: 5 - ((i % 3) + 1) })));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^START TRANSACTION;/);
    expect((sent[0] as string).match(/FOR UPDATE/g)).toHaveLength(1);
    expect((sent[0] as string).match(/UPDATE `keys` (FORCE INDEX \(keys_id\) )?SET remaining_requests/g)).toHaveLength(1);
    for (const [i, id] of ids.entries()) expect(await readCredits(h.db.pool, id)).toBe(5 - ((i % 3) + 1));
  });

  it("a key named twice in a batch is spent both costs, each reported in order, or neither when the balance does not cover both", async () => {
    const [twice, once, short] = (await keysWithCredits(3, 10)) as [string, string, string];
    await h.db.pool.query("UPDATE `keys` SET remaining_requests = 4 WHERE id = ?", [short]);
    expect(
      await spendCreditsOfKeys(h.db.pool, [
        { keyId: twice, cost: 2 },
        { keyId: short, cost: 3 },
        { keyId: once, cost: 1 },
        { keyId: twice, cost: 3 },
        { keyId: short, cost: 2 },
      ]),
    ).toEqual([8, undefined, 9, 5, undefined]);
    expect(await readCredits(h.db.pool, twice)).toBe(5);
    expect(await readCredits(h.db.pool, once)).toBe(9);
    expect(await readCredits(h.db.pool, short)).toBe(4);
  });

  it("a batch's locking read and UPDATE go through the id index, even when the batch names every key of the table", async () => {
    const mine = await keysWithCredits(12, 5);
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id FROM `keys`");
    const all = rows.map((r) => r.id as string);
    const { pool, sent, values } = noting(h.db.pool);
    await spendCreditsOfKeys(
      pool,
      all.map((keyId) => ({ keyId, cost: 1 })),
    );
    expect(sent).toHaveLength(1);
    // The transaction's statements, each with its own values, explained one by one.
    const statements = (sent[0] as string).split(";\n").slice(1, -1);
    expect(statements).toHaveLength(2);
    let at = 0;
    for (const sql of statements) {
      const n = sql.split("?").length - 1;
      const inlined = format(sql, (values[0] as SqlValue[]).slice(at, at + n));
      at += n;
      const [plan] = await h.db.pool.query<RowDataPacket[]>(`EXPLAIN ${inlined}`);
      // A table scan here would lock every row of the table, in the primary key's order.
      expect(plan.map((r) => r.key)).toEqual(["keys_id"]);
    }
    expect(all).toEqual(expect.arrayContaining(mine));
    for (const id of mine) expect(await readCredits(h.db.pool, id)).toBe(4);
  });

  it("many spends of many keys at once: never overspent, every refusal reports the balance, the database agrees", async () => {
    const ids = await keysWithCredits(20, 10);
    const spender = new CreditSpender(h.db.pool);
    // 15 spends a key, interleaved over the keys, in several turns.
    const spends: Array<Promise<{ id: string; ok: boolean; remaining: number | undefined }>> = [];
    for (let round = 0; round < 15; round++) {
      for (const id of ids) spends.push(spender.spend(id, 1).then((r) => ({ id, ...r })));
      if (round % 4 === 3) await new Promise((r) => setImmediate(r));
    }
    const results = await Promise.all(spends);
    for (const id of ids) {
      const mine = results.filter((r) => r.id === id);
      const ok = mine.filter((r) => r.ok);
      expect(ok).toHaveLength(10);
      // Each granted spend saw its own balance after it: 9 down to 0, each once.
      expect(ok.map((r) => r.remaining).sort((a, b) => (a as number) - (b as number))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(mine.filter((r) => !r.ok).every((r) => r.remaining === 0)).toBe(true);
      expect(await readCredits(h.db.pool, id)).toBe(0);
    }
  });

  it("in one batch, a key short of credits and a key become unlimited are decided on their own; the others are spent", async () => {
    const [rich, poor, unlimited] = await keysWithCredits(3, 4);
    await h.db.pool.query("UPDATE `keys` SET remaining_requests = 1 WHERE id = ?", [poor]);
    await h.db.pool.query("UPDATE `keys` SET remaining_requests = NULL WHERE id = ?", [unlimited]);
    const spender = new CreditSpender(h.db.pool);
    const [a, b, c, d] = await Promise.all([
      spender.spend(rich as string, 3),
      spender.spend(poor as string, 1),
      spender.spend(poor as string, 1),
      spender.spend(unlimited as string, 2),
    ]);
    expect(a).toEqual({ ok: true, remaining: 1 });
    // The poor key's group of two did not fit: one by one, the first gets the last credit.
    expect([b, c]).toEqual([
      { ok: true, remaining: 0 },
      { ok: false, remaining: 0 },
    ]);
    expect(d).toEqual({ ok: true, remaining: undefined });
    expect(await readCredits(h.db.pool, rich as string)).toBe(1);
    expect(await readCredits(h.db.pool, poor as string)).toBe(0);
    expect(await readCredits(h.db.pool, unlimited as string)).toBeUndefined();
  });

  it("a key the batch could not cover, held up on its own, holds up none of the keys batched with it", async () => {
    const [rich, poor] = await keysWithCredits(2, 10);
    await h.db.pool.query("UPDATE `keys` SET remaining_requests = 1 WHERE id = ?", [poor]);
    // The poor key's own spend (spendCredits, a lone statement on the pool) waits at this gate.
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let held = 0;
    const gated = new Proxy(h.db.pool, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop !== "execute") return typeof v === "function" ? v.bind(target) : v;
        return async (sql: unknown, params: unknown[] = []) => {
          if (typeof sql === "string" && sql.includes("LAST_INSERT_ID") && params.includes(poor)) {
            held++;
            await gate;
          }
          return v.call(target, sql, params);
        };
      },
    }) as Pool;
    const spender = new CreditSpender(gated);
    const first = spender.spend(rich as string, 1);
    const short = spender.spend(poor as string, 2);
    expect(await first).toEqual({ ok: true, remaining: 9 });
    // The rich key's next spend goes and is answered while the poor key is still held.
    expect(await spender.spend(rich as string, 1)).toEqual({ ok: true, remaining: 8 });
    expect(held).toBe(1);
    let shortSettled = false;
    void short.then(() => {
      shortSettled = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(shortSettled).toBe(false);
    open();
    expect(await short).toEqual({ ok: false, remaining: 1 });
    expect(await readCredits(h.db.pool, rich as string)).toBe(8);
    expect(await readCredits(h.db.pool, poor as string)).toBe(1);
  });

  /**
   * The pool as a Galera node where a transaction (a batch) whose values
   * `loses.batch` picks loses to another node's change at certification: it
   * runs, is rolled back at its commit and reported as a deadlock. A lone
   * statement (a key's own spend) whose values `loses.alone` picks loses too,
   * without running. Counts what it refused.
   */
  function certifying(loses: { batch(params: unknown): boolean; alone?(params: unknown): boolean }): {
    pool: Pool;
    refused: { batches: number; alone: number };
  } {
    const refused = { batches: 0, alone: 0 };
    const pool = new Proxy(h.db.pool, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop === "execute") {
          return async (sql: unknown, params: unknown[] = []) => {
            if (loses.alone?.(params) === true) {
              refused.alone++;
              throw deadlock();
            }
            return v.call(target, sql, params);
          };
        }
        if (prop !== "getConnection") return typeof v === "function" ? v.bind(target) : v;
        return async () => {
          const conn = await v.call(target);
          return new Proxy(conn, {
            get(c, p, r) {
              const f = Reflect.get(c, p, r);
              if (p !== "query") return typeof f === "function" ? f.bind(c) : f;
              return async (sql: unknown, ...rest: unknown[]) => {
                if (typeof sql === "string" && sql.startsWith("START TRANSACTION") && loses.batch(rest[0])) {
                  // As Galera reports it: the whole transaction ran, then was rolled back at its commit.
                  refused.batches++;
                  await c.query(sql.replace(/COMMIT$/, "ROLLBACK"), ...rest);
                  throw deadlock();
                }
                return f.call(c, sql, ...rest);
              };
            },
          });
        };
      },
    }) as Pool;
    return { pool, refused };
  }

  /** certifying, losing every transaction that names `contended`, and with `alone` its lone spends too. */
  const losingOn = (contended: string, alone: boolean) => {
    const names = (params: unknown) => Array.isArray(params) && params.includes(contended);
    return certifying({ batch: names, alone: alone ? names : () => false });
  };

  it("a batch that keeps losing one key's row lock is decided key by key: the other keys are spent, and so is the contended key on its own", async () => {
    const [a, contended, b] = (await keysWithCredits(3, 10)) as [string, string, string];
    const { pool, refused } = losingOn(contended, false);
    const spender = new CreditSpender(pool);
    const results = await Promise.all([spender.spend(a, 1), spender.spend(contended, 2), spender.spend(b, 3)]);
    expect(results).toEqual([
      { ok: true, remaining: 9 },
      { ok: true, remaining: 8 },
      { ok: true, remaining: 7 },
    ]);
    // The batch was sent whole, retried until it gave up, then not again.
    expect(refused.batches).toBe(6);
    expect(await readCredits(h.db.pool, a)).toBe(9);
    expect(await readCredits(h.db.pool, contended)).toBe(8);
    expect(await readCredits(h.db.pool, b)).toBe(7);
  });

  it("when the contended key loses on its own too, only its verifications fail; the keys batched with it are spent once", async () => {
    const [a, contended, b] = (await keysWithCredits(3, 10)) as [string, string, string];
    const { pool, refused } = losingOn(contended, true);
    const spender = new CreditSpender(pool);
    const settled = await Promise.allSettled([spender.spend(a, 1), spender.spend(contended, 2), spender.spend(b, 3)]);
    expect(settled[0]).toEqual({ status: "fulfilled", value: { ok: true, remaining: 9 } });
    expect(settled[1]).toMatchObject({ status: "rejected", reason: { code: "ER_LOCK_DEADLOCK" } });
    expect(settled[2]).toEqual({ status: "fulfilled", value: { ok: true, remaining: 7 } });
    expect(refused.alone).toBe(5);
    expect(await readCredits(h.db.pool, a)).toBe(9);
    expect(await readCredits(h.db.pool, contended)).toBe(10);
    expect(await readCredits(h.db.pool, b)).toBe(7);
    // The key is let go: its next spend goes (and wins, once the other node's changes stop).
    const { pool: quiet } = losingOn("none", false);
    expect(await new CreditSpender(quiet).spend(contended, 1)).toEqual({ ok: true, remaining: 9 });
  });

  it("a batch that waited out a row lock held elsewhere on one of its keys is decided key by key: the others are answered without waiting again", async () => {
    const [a, held, b] = (await keysWithCredits(3, 10)) as [string, string, string];
    // Another transaction (another instance's, say) holds the key's row.
    const holder = await h.db.pool.getConnection();
    try {
      await holder.query("START TRANSACTION");
      await holder.query("SELECT id FROM `keys` WHERE id = ? FOR UPDATE", [held]);
      // The batch's connections wait 1 s for a row lock (the pool's wait is half the statement timeout).
      const [[{ wait }]] = (await h.db.pool.query("SELECT @@innodb_lock_wait_timeout AS wait")) as unknown as [[{ wait: number }]];
      const shortened: Array<{ query(sql: string): Promise<unknown> }> = [];
      const impatient = new Proxy(h.db.pool, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (prop !== "getConnection") return typeof v === "function" ? v.bind(target) : v;
          return async () => {
            const conn = await v.call(target);
            await conn.query("SET SESSION innodb_lock_wait_timeout = 1");
            shortened.push(conn);
            return conn;
          };
        },
      }) as Pool;
      onTestFinished(async () => {
        for (const conn of shortened) await conn.query(`SET SESSION innodb_lock_wait_timeout = ${Number(wait)}`);
      });
      const spender = new CreditSpender(impatient);
      const heldSpend = spender.spend(held, 2);
      let heldSettled = false;
      void heldSpend.then(
        () => void (heldSettled = true),
        () => void (heldSettled = true),
      );
      expect(await Promise.all([spender.spend(a, 1), spender.spend(b, 3)])).toEqual([
        { ok: true, remaining: 9 },
        { ok: true, remaining: 7 },
      ]);
      // The held key's own spend waits for the row again, and goes once it is let go.
      expect(heldSettled).toBe(false);
      await holder.query("COMMIT");
      expect(await heldSpend).toEqual({ ok: true, remaining: 8 });
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      holder.release();
    }
    expect(await readCredits(h.db.pool, a)).toBe(9);
    expect(await readCredits(h.db.pool, held)).toBe(8);
    expect(await readCredits(h.db.pool, b)).toBe(7);
  });

  it("a batch rolled back as a deadlock (a certification conflict) is sent again and spent once", async () => {
    const ids = await keysWithCredits(3, 10);
    let lost = 0;
    const { pool: conflicting, refused } = certifying({ batch: () => lost++ < 2 });
    expect(
      await spendCreditsOfKeys(conflicting, [
        { keyId: ids[2] as string, cost: 3 },
        { keyId: ids[0] as string, cost: 1 },
        { keyId: ids[1] as string, cost: 20 },
      ]),
    ).toEqual([7, 9, undefined]);
    expect(refused.batches).toBe(2);
    expect(await readCredits(h.db.pool, ids[0] as string)).toBe(9);
    expect(await readCredits(h.db.pool, ids[1] as string)).toBe(10);
    expect(await readCredits(h.db.pool, ids[2] as string)).toBe(7);
  });
});
