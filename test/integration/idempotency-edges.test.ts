// Idempotency-Key edge cases found in review: an unknown outcome, the sweep keeping
// up, and a retry whose meta lists its fields in another order.
import type { PoolConnection } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { api, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

const idem = (k: string) => ({ "idempotency-key": k });
let n = 0;
const fresh = (): string => `review-${Date.now()}-${++n}`;

describe("Idempotency-Key edges", () => {
  const h = useHarness();

  /** Sends a createKey whose outcome is unknown to keyhold, then its retry: one key at most, and the retry told 409. */
  async function lostAnswer(rk: string, apiId: string, body: Record<string, unknown>, breakNextWrite: () => () => void): Promise<void> {
    const restore = breakNextWrite();
    const ik = fresh();
    const first = await h.post("/v2/keys.createKey", body, rk, idem(ik));
    restore();
    expect(first.status, first.text).toBe(503);
    // The client does what Idempotency-Key is for: retries with the same key.
    const retry = await h.post("/v2/keys.createKey", body, rk, idem(ik));
    const list = await h.post("/v2/apis.listKeys", { apiId }, rk);
    // One logical request, so at most one key; the retry may be told 409 (outcome unknown), not run again.
    expect(list.body.data, `retry answered ${retry.status}`).toHaveLength(1);
    expect(retry.status, retry.text).toBe(409);
  }

  const lost = () => Object.assign(new Error("Connection lost: The server closed the connection."), { code: "PROTOCOL_CONNECTION_LOST", fatal: true });

  /**
   * The next transaction's COMMIT reaches the server, then the connection drops
   * before the OK comes back: a COMMIT sent on its own (conn.commit) or as the last
   * statement of a change sent in one round trip (sql.ts's commitInOneTrip).
   */
  const loseCommitAnswer = (): (() => void) => {
    const pool = h.db.pool as unknown as { getConnection: () => Promise<PoolConnection> };
    const getConnection = pool.getConnection;
    pool.getConnection = async () => {
      const conn = await getConnection();
      pool.getConnection = getConnection;
      const commit = conn.commit.bind(conn);
      conn.commit = async () => {
        await commit();
        throw lost();
      };
      const query = conn.query.bind(conn) as (...a: unknown[]) => Promise<unknown>;
      (conn as unknown as { query: (...a: unknown[]) => Promise<unknown> }).query = async (...a: unknown[]) => {
        const result = await query(...a);
        if (typeof a[0] === "string" && /;\s*COMMIT\s*$/.test(a[0])) throw lost();
        return result;
      };
      return conn;
    };
    return () => {
      pool.getConnection = getConnection;
    };
  };

  it("a createKey whose commit succeeded but whose answer was lost (503) is not run a second time by its retry", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    // A key with a rate limit is written in a transaction. Its COMMIT reaches the server, then the connection
    // drops before the OK comes back (what the statement watchdog does to a slow commit): the outcome is unknown.
    await lostAnswer(rk, apiId, { apiId, name: "lost-ack", ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }] }, loseCommitAnswer);
  });

  // A plain key was once one INSERT outside a transaction; with its audit record it
  // is a transaction like every other key, so its lost answer is a lost COMMIT ack.
  it("a plain createKey whose commit succeeded but whose answer was lost is not run a second time by its retry", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await lostAnswer(rk, apiId, { apiId, name: "lost-plain" }, loseCommitAnswer);
  });

  it("expired records are swept faster than one idempotent request a minute can create them", async () => {
    const rk = await h.rootKey(["*"]);
    const now = Date.now();
    // 2,500 expired records: what 42 idempotent requests/s leave behind each minute on one instance.
    const values = Array.from({ length: 2_500 }, (_, i) => [h.workspaceId, "key_old", `${i}`.padStart(64, "0"), "op", "0".repeat(64), 1, now - 10, now - 5]);
    await h.db.pool.query(
      "INSERT INTO idempotency_records (workspace_id, root_key_id, key_hash, operation, request_hash, state, created_at_m, expires_at_m) VALUES ?",
      [values],
    );
    // A sweep is due (more than a minute since the last one): this request starts it.
    const later = now + 120_000;
    expect((await withClock(h, later, () => h.post("/v2/apis.createApi", { name: "sweeper" }, rk, idem(fresh())))).status).toBe(200);
    const left = async () => {
      const [r] = (await h.db.pool.query("SELECT COUNT(*) AS n FROM idempotency_records WHERE expires_at_m <= ?", [now])) as unknown as [{ n: number }[]];
      return Number(r[0]?.n);
    };
    await expect.poll(left, { timeout: 5_000 }).toBeLessThan(2_500);
    // Another idempotent request within the minute does not sweep again.
    expect((await withClock(h, later + 1_000, () => h.post("/v2/apis.createApi", { name: "sweeper2" }, rk, idem(fresh())))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(await left(), "expired records left after the sweep (LIMIT 1000 once a minute per process)").toBe(0);
  });

  it("a retry whose meta object lists the same fields in another order is the same request", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const ik = fresh();
    const a = await h.post("/v2/keys.createKey", { apiId, meta: { plan: "pro", region: "eu" } }, rk, idem(ik));
    expect(a.status, a.text).toBe(200);
    const b = await h.post("/v2/keys.createKey", { apiId, meta: { region: "eu", plan: "pro" } }, rk, idem(ik));
    expect(b.status, b.text).toBe(200);
    expect(b.body.data.keyId).toBe(a.body.data.keyId);
  });
});
