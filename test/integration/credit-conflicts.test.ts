// A credit spend that the database rolls back as a deadlock is decided again, not
// answered 503: on a Galera cluster every spend of a key that another node spent
// in the same instant fails certification at commit, reported as ER_LOCK_DEADLOCK
// (1213) after the transaction was rolled back. Here the real database runs every
// statement; the deadlock is injected at the point Galera reports it (the commit
// of the batch's transaction; the single conditional UPDATE), after a real rollback.
import { describe, expect, it } from "vitest";
import { readCredits, spendCredits, spendEach } from "../../src/storage/keys.js";
import type { Pool, PoolConnection } from "../../src/storage/sql.js";
import { api, key } from "../fixtures.js";
import { useHarness } from "../harness.js";

const deadlock = () =>
  Object.assign(new Error("Deadlock found when trying to get lock; try restarting transaction"), { code: "ER_LOCK_DEADLOCK", errno: 1213 });

/** The harness's pool, with the first `times` commits failing as a certification conflict (after a real rollback). */
function commitsConflicting(pool: Pool, times: number): { pool: Pool; conflicts: () => number } {
  let left = times;
  let conflicts = 0;
  const wrapped = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== "getConnection") return Reflect.get(target, prop, receiver);
      return async () => {
        const conn = await target.getConnection();
        return new Proxy(conn, {
          get(c, p, r) {
            if (p !== "commit") return Reflect.get(c, p, r);
            return async () => {
              if (left > 0) {
                left--;
                conflicts++;
                await c.rollback();
                throw deadlock();
              }
              return c.commit();
            };
          },
        }) as PoolConnection;
      };
    },
  });
  return { pool: wrapped, conflicts: () => conflicts };
}

/** The pool, with the first `times` credit UPDATEs failing as a deadlock instead of running. */
function updatesConflicting(pool: Pool, times: number): Pool {
  let left = times;
  const intercept =
    (fn: (...a: unknown[]) => unknown) =>
    (sql: unknown, ...rest: unknown[]) => {
      if (left > 0 && typeof sql === "string" && sql.startsWith("UPDATE `keys` SET remaining_requests")) {
        left--;
        return Promise.reject(deadlock());
      }
      return fn(sql, ...rest);
    };
  return new Proxy(pool, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      return prop === "execute" || prop === "query" ? intercept(v.bind(target)) : v;
    },
  });
}

describe("credit spends rolled back as deadlocks (Galera certification conflicts)", () => {
  const h = useHarness();

  it("a batch whose commit conflicts twice is decided again from the committed balance: exact, nothing lost", async () => {
    const rk = await h.rootKey(["*"]);
    const k = await key(h, rk, await api(h, rk), { credits: { remaining: 5 } });
    const { pool, conflicts } = commitsConflicting(h.db.pool, 2);
    const spent = await spendEach(pool, k.keyId, [2, 2, 2]);
    expect(conflicts()).toBe(2);
    expect(spent).toEqual({
      unlimited: false,
      results: [
        { ok: true, remaining: 3 },
        { ok: true, remaining: 1 },
        { ok: false, remaining: 1 },
      ],
    });
    expect(await readCredits(h.db.pool, k.keyId)).toBe(1);
  });

  it("a conditional spend that conflicts is run again: spent once", async () => {
    const rk = await h.rootKey(["*"]);
    const k = await key(h, rk, await api(h, rk), { credits: { remaining: 10 } });
    expect(await spendCredits(updatesConflicting(h.db.pool, 2), k.keyId, 3)).toEqual({ ok: true, remaining: 7 });
    expect(await readCredits(h.db.pool, k.keyId)).toBe(7);
  });

  it("a conflict that keeps recurring still ends as the database's error (a 503 upstream), having spent nothing", async () => {
    const rk = await h.rootKey(["*"]);
    const k = await key(h, rk, await api(h, rk), { credits: { remaining: 10 } });
    await expect(spendEach(commitsConflicting(h.db.pool, 100).pool, k.keyId, [1])).rejects.toMatchObject({ code: "ER_LOCK_DEADLOCK" });
    expect(await readCredits(h.db.pool, k.keyId)).toBe(10);
  });
});
