// sql.ts's commitWithOthers: changes asked for in one event-loop turn (or while
// two groups are at the database) share a round trip, and each still commits
// whole or not at all, its failure its own.
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import { auditInserts } from "../../src/storage/audit.js";
import { openDatabase } from "../../src/storage/db.js";
import { commitWithOthers, GROUP_WAIT_MAX_MS, type Pool, type Statement } from "../../src/storage/sql.js";
import { expectOk, uid } from "../contract/shared/helpers.js";
import { api } from "../fixtures.js";
import { useHarness } from "../harness.js";

/**
 * A change of two rows that must commit together: a parent, and a child that is
 * written only if its parent is already there (so a child row proves the order).
 */
const change = (id: string): Statement[] => [
  { sql: "INSERT INTO commit_parent (id) VALUES (?)", params: [id] },
  { sql: "INSERT INTO commit_child (parent_id) SELECT id FROM commit_parent WHERE id = ?", params: [id] },
];
/** A change of one row, taking no lock but its own row's (concurrent groups of these never deadlock). */
const single = (id: string): Statement[] => [{ sql: "INSERT INTO commit_parent (id) VALUES (?)", params: [id] }];
/** The same change with its parent's INSERT marked rows (merged with the others of its group). */
const marked = (id: string): Statement[] => [{ ...(change(id)[0] as Statement), rows: true }, change(id)[1] as Statement];

/**
 * Runs fn with the pool watched: the connections asked of it (refused ones too) and
 * the SQL of each round trip of commitInOneTrip (a connection's first query; a
 * ROLLBACK after a failure is not a trip), which fn is handed as they come.
 */
async function watched<T>(pool: Pool, fn: (trips: readonly string[]) => Promise<T>): Promise<{ value: T; asked: number; trips: string[] }> {
  type Conn = { query: (...a: unknown[]) => unknown };
  const p = pool as unknown as { getConnection: () => Promise<Conn> };
  const original = p.getConnection;
  let asked = 0;
  const trips: string[] = [];
  p.getConnection = async () => {
    asked++;
    const conn = await original.apply(pool, []);
    const query = conn.query;
    let first = true;
    conn.query = (...a: unknown[]) => {
      if (first) trips.push(String(a[0]));
      first = false;
      return query.apply(conn, a);
    };
    return conn;
  };
  try {
    return { value: await fn(trips), asked, trips };
  } finally {
    p.getConnection = original;
  }
}

/** Polls until ok() holds; fails after 10 s. */
async function until(what: string, ok: () => boolean): Promise<void> {
  for (const started = Date.now(); !ok(); await new Promise((r) => setTimeout(r, 5)))
    if (Date.now() - started > 10_000) throw new Error(`still waiting for ${what}`);
}

/** Commits the changes together; what each came to ("ok" or its error's code, in order), and the pool as watched. */
async function commitAll(pool: Pool, changes: Statement[][]): Promise<{ outcomes: string; asked: number; trips: string[] }> {
  const { value, asked, trips } = await watched(pool, () => Promise.allSettled(changes.map((c) => commitWithOthers(pool, c))));
  const outcomes = value.map((r) => (r.status === "fulfilled" ? "ok" : String((r.reason as { code?: string }).code ?? r.reason))).join(", ");
  return { outcomes, asked, trips };
}

describe("commitWithOthers", () => {
  const h = useHarness();

  beforeAll(async () => {
    // Both with an AUTO_INCREMENT, as keys and audit_logs have: a merged INSERT sets LAST_INSERT_ID() too.
    await h.db.pool.query("CREATE TABLE commit_parent (pk INT AUTO_INCREMENT PRIMARY KEY, id VARCHAR(64) NOT NULL UNIQUE)");
    await h.db.pool.query("CREATE TABLE commit_child (id INT AUTO_INCREMENT PRIMARY KEY, parent_id VARCHAR(64) NOT NULL)");
    await h.db.pool.query("CREATE TABLE commit_index (child_pk INT NOT NULL, parent_id VARCHAR(64) NOT NULL)");
  });

  const parents = async (ids: string[]) =>
    (await h.db.pool.query<mysql.RowDataPacket[]>("SELECT id FROM commit_parent WHERE id IN (?) ORDER BY id", [ids]))[0].map((r) => r.id as string);
  const children = async (ids: string[]) =>
    (await h.db.pool.query<mysql.RowDataPacket[]>("SELECT parent_id FROM commit_child WHERE parent_id IN (?) ORDER BY parent_id", [ids]))[0].map(
      (r) => r.parent_id as string,
    );

  it("changes asked for in one turn go in one round trip, every one committed", async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `${uid("together")}_${i}`);
    const { outcomes, trips } = await commitAll(h.db.pool, ids.map(change));
    expect(outcomes).toBe(ids.map(() => "ok").join(", "));
    expect(trips).toHaveLength(1);
    expect(await parents(ids)).toEqual([...ids].sort());
    expect(await children(ids)).toEqual([...ids].sort());
  });

  it("INSERTs marked rows, into the same table and columns, go as one INSERT ahead of the rest; each child still finds its parent", async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `${uid("merged")}_${i}`);
    const { trips } = await commitAll(h.db.pool, ids.map(marked));
    expect(trips).toHaveLength(1);
    const statements = (trips[0] as string).split(";\n");
    expect(statements[0]).toBe("START TRANSACTION");
    expect(statements[1]).toBe(`INSERT INTO commit_parent (id) VALUES ${ids.map(() => "(?)").join(", ")}`);
    expect(statements.filter((t) => t.startsWith("INSERT INTO commit_parent"))).toHaveLength(1);
    expect(statements.filter((t) => t.startsWith("INSERT INTO commit_child"))).toHaveLength(6);
    expect(await parents(ids)).toEqual([...ids].sort());
    expect(await children(ids)).toEqual([...ids].sort());
  });

  it("a statement marked rows that is not plain tuples (ON DUPLICATE KEY UPDATE) goes as it is, group after group", async () => {
    const upsert = "INSERT INTO commit_parent (id) VALUES (?) ON DUPLICATE KEY UPDATE id = VALUES(id)";
    for (let round = 0; round < 2; round++) {
      const [a, b, c] = [uid("plain_a"), uid("upsert_b"), uid("plain_c")];
      const rowsOf = (id: string): Statement[] => [{ ...(single(id)[0] as Statement), rows: true }];
      const { outcomes, trips } = await commitAll(h.db.pool, [rowsOf(a), [{ sql: upsert, params: [b], rows: true }], rowsOf(c)]);
      expect(outcomes).toBe("ok, ok, ok");
      expect((trips[0] as string).split(";\n")).toEqual(["START TRANSACTION", "INSERT INTO commit_parent (id) VALUES (?), (?)", upsert, "COMMIT"]);
      expect(await parents([a, b, c])).toEqual([a, b, c].sort());
    }
  });

  it("a LAST_INSERT_ID() read right after its own INSERT reads that INSERT's value, merged rows or not", async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `${uid("last_id")}_${i}`);
    // As a key and its audit record: the merged INSERT (AUTO_INCREMENT) first, then a
    // child (AUTO_INCREMENT) and an index naming the child by LAST_INSERT_ID().
    const withIndex = (id: string): Statement[] => [
      ...marked(id),
      { sql: "INSERT INTO commit_index (child_pk, parent_id) VALUES (LAST_INSERT_ID(), ?)", params: [id] },
    ];
    expect((await commitAll(h.db.pool, ids.map(withIndex))).trips).toHaveLength(1);
    const [rs] = await h.db.pool.query<mysql.RowDataPacket[]>(
      "SELECT i.parent_id AS indexed, c.parent_id AS child FROM commit_index i LEFT JOIN commit_child c ON c.id = i.child_pk WHERE i.parent_id IN (?)",
      [ids],
    );
    expect(rs).toHaveLength(8);
    for (const r of rs) expect(r.child).toBe(r.indexed);
  });

  it("a duplicate among merged rows still fails only its own change", async () => {
    const taken = uid("taken_merged");
    await h.db.pool.query("INSERT INTO commit_parent (id) VALUES (?)", [taken]);
    const ids = [uid("m1"), uid("m2"), uid("m3")];
    const { outcomes } = await commitAll(
      h.db.pool,
      [ids[0], taken, ids[1], ids[2]].map((id) => marked(id as string)),
    );
    expect(outcomes).toBe("ok, ER_DUP_ENTRY, ok, ok");
    expect(await parents(ids)).toEqual([...ids].sort());
    expect(await children([...ids, taken])).toEqual([...ids].sort());
  });

  it("changes of different turns go in their own round trips", async () => {
    const ids = [uid("first"), uid("second")];
    const { trips } = await watched(h.db.pool, async () => {
      await commitWithOthers(h.db.pool, change(ids[0] as string));
      await commitWithOthers(h.db.pool, change(ids[1] as string));
    });
    expect(trips).toHaveLength(2);
    expect(await parents(ids)).toEqual([...ids].sort());
  });

  /**
   * Keeps two groups at the database (each waits for a unique entry a holder has
   * locked), then asks for `n` more changes, each in a turn of its own (with a slot
   * free, each would be a round trip); `then` runs with the trips sent so far, and
   * must end the hold (holder.rollback()). A committed row between the two held
   * entries keeps their index gaps apart: once the holder's rows are gone, waiters
   * in one merged gap would deadlock each other. Returns how many trips had gone
   * when the n were asked for, what `then` returned, and every trip.
   */
  async function withTwoGroupsHeld<T>(n: number, then: (sent: readonly string[], holder: mysql.PoolConnection) => Promise<T>) {
    const holder = await h.db.pool.getConnection();
    try {
      const held = uid("held");
      const [x, y] = [`${held}_a`, `${held}_z`];
      await h.db.pool.query("INSERT INTO commit_parent (id) VALUES (?)", [`${held}_m`]);
      await holder.beginTransaction();
      await holder.query("INSERT INTO commit_parent (id) VALUES (?), (?)", [x, y]);
      const later = Array.from({ length: n }, (_, i) => `${uid("later")}_${i}`);
      const turn = () => new Promise((r) => setImmediate(r));
      const { value, trips } = await watched(h.db.pool, async (sent) => {
        const all = [commitWithOthers(h.db.pool, single(x))];
        await turn();
        all.push(commitWithOthers(h.db.pool, single(y)));
        await until("the two held groups to be sent", () => sent.length === 2);
        for (const id of later) {
          all.push(commitWithOthers(h.db.pool, single(id)));
          await turn();
        }
        const sentAtOnce = sent.length;
        const result = await then(sent, holder);
        await Promise.all(all);
        return { sentAtOnce, result };
      });
      expect(await parents([x, y, ...later])).toEqual([x, y, ...later].sort());
      return { ...value, trips };
    } finally {
      await holder.rollback().catch(() => undefined);
      holder.release();
    }
  }

  it("changes asked for while two groups are at the database wait, and go together after GROUP_WAIT_MAX_MS if both stay there", async () => {
    const {
      sentAtOnce,
      result: waited,
      trips,
    } = await withTwoGroupsHeld(5, async (sent, holder) => {
      const waitingSince = Date.now();
      await until("the waiting changes to go anyway", () => sent.length === 3);
      const waited = Date.now() - waitingSince;
      await holder.rollback();
      return waited;
    });
    expect(sentAtOnce).toBe(2);
    // Measured from after the five were asked for: the wait began a little earlier.
    expect(waited).toBeGreaterThanOrEqual(GROUP_WAIT_MAX_MS - 50);
    expect(trips.map((t) => t.split(";\n").length - 2)).toEqual([1, 1, 5]);
  });

  it("changes asked for while two groups are at the database go together when one comes back", async () => {
    // Released well before GROUP_WAIT_MAX_MS: the groups come back, and the four go with the first slot.
    const { sentAtOnce, trips } = await withTwoGroupsHeld(4, (_, holder) => holder.rollback());
    expect(sentAtOnce).toBe(2);
    expect(trips.map((t) => t.split(";\n").length - 2)).toEqual([1, 1, 4]);
  });

  it("one failing change fails alone: the others commit, and none of its rows is left", async () => {
    const taken = uid("taken");
    await h.db.pool.query("INSERT INTO commit_parent (id) VALUES (?)", [taken]);
    const ids = Array.from({ length: 5 }, (_, i) => `${uid("beside")}_${i}`);
    // The failing change sits in the middle: changes before it ran in the group's transaction, changes after it did not.
    const order = [ids[0], ids[1], taken, ids[2], ids[3], ids[4]] as string[];
    const { outcomes, trips } = await commitAll(h.db.pool, order.map(change));
    expect(outcomes).toBe("ok, ok, ER_DUP_ENTRY, ok, ok, ok");
    // The group, rolled back, then each change on its own.
    expect(trips).toHaveLength(1 + order.length);
    expect(await parents(ids)).toEqual([...ids].sort());
    expect(await children(ids)).toEqual([...ids].sort());
    // The taken id's own change left no child row: its transaction was rolled back whole.
    expect(await children([taken])).toEqual([]);
  });

  it("an error no single change explains (a missing table) fails every change of the group once, with no trip each", async () => {
    const ids = [uid("n1"), uid("n2"), uid("n3")];
    const broken: Statement[] = [{ sql: "INSERT INTO commit_missing (id) VALUES (?)", params: ["x"] }];
    const { outcomes, trips } = await commitAll(h.db.pool, [change(ids[0] as string), broken, change(ids[1] as string), change(ids[2] as string)]);
    expect(trips).toHaveLength(1);
    expect(outcomes).toBe("ER_NO_SUCH_TABLE, ER_NO_SUCH_TABLE, ER_NO_SUCH_TABLE, ER_NO_SUCH_TABLE");
    expect(await parents(ids)).toEqual([]);
  });

  it("a lock wait on one change's row: the others commit on their own, that one waits again and fails alone", async () => {
    // Lock waits of 1 s (db.ts: half the statement limit, in whole seconds).
    const db = await openDatabase(h.config.databaseUrl ?? "", { connectTimeoutMs: 2_000, queryTimeoutMs: 2_000 });
    const holder = await h.db.pool.getConnection();
    try {
      const held = uid("held");
      await holder.beginTransaction();
      await holder.query("INSERT INTO commit_parent (id) VALUES (?)", [held]); // its unique entry stays locked until the rollback
      const ids = [uid("free1"), uid("free2"), uid("free3")];
      const { outcomes, trips } = await commitAll(
        db.pool,
        [ids[0], held, ids[1], ids[2]].map((id) => single(id as string)),
      );
      expect(outcomes).toBe("ok, ER_LOCK_WAIT_TIMEOUT, ok, ok");
      expect(trips).toHaveLength(1 + 4);
      expect(await parents(ids)).toEqual([...ids].sort());
    } finally {
      await holder.rollback();
      holder.release();
      await db.close();
    }
  });

  it("at most 64 changes share a round trip", async () => {
    const ids = Array.from({ length: 70 }, (_, i) => `${uid("many")}_${i}`);
    const { trips } = await commitAll(h.db.pool, ids.map(single));
    expect(trips.map((t) => t.split(";\n").length - 2).sort((a, b) => b - a)).toEqual([64, 6]);
    expect(await parents(ids)).toHaveLength(70);
  });

  it("large changes are split by size: at most 256 KB of SQL as sent (values counted escaped, so twice their size) a round trip", async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `${uid("large")}_${i}`);
    // 50 KB of values each, counted as 100 KB escaped: two fit in a group, the third starts the next.
    const large = (id: string): Statement[] => [
      { sql: "INSERT INTO commit_parent (id) VALUES (?)", params: [id] },
      { sql: "SELECT LENGTH(?)", params: ["x".repeat(50 * 1024)] },
    ];
    const { outcomes, trips } = await commitAll(h.db.pool, ids.map(large));
    expect(outcomes).toBe(ids.map(() => "ok").join(", "));
    expect(trips).toHaveLength(3);
    expect(await parents(ids)).toHaveLength(5);
  });

  describe("when the database cannot be reached", () => {
    let down: Pool;
    beforeAll(() => {
      // Nothing listens on port 1: every connection is refused.
      down = mysql.createPool({ host: "127.0.0.1", port: 1, user: "root", connectTimeout: 2_000 });
    });
    afterAll(async () => {
      await down.end();
    });

    it("every change of the group fails with the database's error, without a round trip each", async () => {
      const ids = Array.from({ length: 4 }, (_, i) => `${uid("down")}_${i}`);
      const { outcomes, asked } = await commitAll(down, ids.map(change));
      expect(outcomes).toBe("ECONNREFUSED, ECONNREFUSED, ECONNREFUSED, ECONNREFUSED");
      expect(asked).toBe(1);
    });
  });

  it("audit records of one turn: one INSERT of the records and one of their index rows; each record indexes its own resources", async () => {
    const workspaceId = uid("ws_audit");
    // Records of 0 to 5 resources, some shared between records, as changes with and without other statements.
    const records = Array.from({ length: 9 }, (_, i) => ({
      id: newId("log"),
      workspaceId,
      time: 1_800_000_000_000 + i,
      actorType: "root_key",
      actorId: "root_test",
      action: "test.change",
      resources: Array.from({ length: i % 6 }, (_, j) => ({ type: "thing", id: j % 2 === 0 ? `shared_${j}` : `own_${i}_${j}` })),
      description: `change ${i}`,
      requestId: undefined,
      remoteAddress: undefined,
      userAgent: undefined,
    }));
    const changes = records.map((r, i) => [
      ...(i % 2 === 0 ? [{ ...(single(uid("with_audit"))[0] as Statement), rows: true as const }] : []),
      ...auditInserts(r),
    ]);
    const { outcomes, trips } = await commitAll(h.db.pool, changes);
    expect(outcomes).toBe(records.map(() => "ok").join(", "));
    expect(trips).toHaveLength(1);
    const sent = (trips[0] as string).split(";\n").map((t) => t.trim().split(/\s+/).slice(0, 3).join(" "));
    expect(sent).toEqual(["START TRANSACTION", "INSERT INTO commit_parent", "INSERT INTO audit_logs", "INSERT INTO audit_resources", "COMMIT"]);
    const [rs] = await h.db.pool.query<mysql.RowDataPacket[]>(
      "SELECT l.id, r.resource_id, r.workspace_id FROM audit_logs l JOIN audit_resources r ON r.audit_id = l.id WHERE l.workspace_id = ?",
      [workspaceId],
    );
    for (const r of records) {
      const indexed = rs.filter((x) => x.id === r.id);
      expect(indexed.map((x) => x.resource_id as string).sort()).toEqual([...new Set(r.resources.map((x) => x.id))].sort());
      for (const x of indexed) expect(x.workspace_id).toBe(workspaceId);
    }
    expect(rs).toHaveLength(records.reduce((n, r) => n + new Set(r.resources.map((x) => x.id)).size, 0));
  });

  it("recoverable keys with limits, made at once: each key's limit and plaintext are its own", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await h.post("/v2/keys.createKey", { apiId }, rk);
    const bodies = Array.from({ length: 12 }, (_, i) => ({
      apiId,
      recoverable: i % 3 !== 0,
      ...(i % 2 === 0 ? { ratelimits: [{ name: `limit_${i}`, limit: 10 + i, duration: 60_000 }] } : {}),
    }));
    const { value: answers, trips } = await watched(h.db.pool, () => Promise.all(bodies.map((b) => h.post("/v2/keys.createKey", b, rk))));
    expect(trips.length).toBeLessThan(12);
    const made = answers.map((r) => expectOk(r) as { keyId: string; key: string });
    for (const [i, m] of made.entries()) {
      const v = expectOk(await h.post("/v2/keys.verifyKey", { key: m.key }, rk)) as { keyId: string; ratelimits?: { name: string; limit: number }[] };
      expect(v.keyId).toBe(m.keyId);
      expect(v.ratelimits ?? []).toEqual(i % 2 === 0 ? [expect.objectContaining({ name: `limit_${i}`, limit: 10 + i })] : []);
      const got = expectOk(await h.post("/v2/keys.getKey", { keyId: m.keyId, decrypt: true }, rk)) as { plaintext?: string };
      expect(got.plaintext).toBe(i % 3 !== 0 ? m.key : undefined);
    }
  });

  it("plain createKeys sent at once share round trips; every key verifies and has its own record", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    await h.post("/v2/keys.createKey", { apiId }, rk); // the API in createKey's cache
    const { value: answers, trips } = await watched(h.db.pool, () =>
      Promise.all(Array.from({ length: 20 }, () => h.post("/v2/keys.createKey", { apiId }, rk))),
    );
    const made = answers.map((r) => expectOk(r) as { keyId: string; key: string });
    // One round trip when the 20 land in one turn, as they do here; a second turn may take a few.
    expect(trips.length).toBeLessThanOrEqual(3);
    // Each trip: the keys, their records and the records' index rows as one INSERT each, not two statements a key.
    for (const trip of trips) {
      const sent = trip.split(";\n").map((t) => t.trim().split(/\s+/).slice(0, 3).join(" "));
      expect(sent).toEqual(["START TRANSACTION", "INSERT INTO `keys`", "INSERT INTO audit_logs", "INSERT INTO audit_resources", "COMMIT"]);
    }
    for (const m of made) {
      const v = expectOk(await h.post("/v2/keys.verifyKey", { key: m.key }, rk)) as { valid: boolean; keyId: string };
      expect(v).toMatchObject({ valid: true, keyId: m.keyId });
    }
    const [records] = await h.db.pool.query<mysql.RowDataPacket[]>(
      "SELECT r.resource_id, l.resources FROM audit_resources r JOIN audit_logs l ON l.id = r.audit_id WHERE r.resource_id IN (?) AND l.action = 'key.create'",
      [made.map((m) => m.keyId)],
    );
    // One record a key, and the index names the record that is about that key (not a neighbour's of the group).
    expect(records.map((r) => r.resource_id as string).sort()).toEqual(made.map((m) => m.keyId).sort());
    for (const r of records) {
      const resources = (typeof r.resources === "string" ? JSON.parse(r.resources) : r.resources) as { type: string; id: string }[];
      expect(resources).toContainEqual({ type: "key", id: r.resource_id });
    }
    // And every record's index rows are its own resources: the key and the API, no more.
    const [indexed] = await h.db.pool.query<mysql.RowDataPacket[]>(
      `SELECT l.pk, l.resources, GROUP_CONCAT(r.resource_id ORDER BY r.resource_id) AS ids FROM audit_logs l JOIN audit_resources r ON r.audit_id = l.id
        WHERE l.id IN (SELECT audit_id FROM audit_resources WHERE resource_id IN (?)) GROUP BY l.pk, l.resources`,
      [made.map((m) => m.keyId)],
    );
    expect(indexed).toHaveLength(20);
    for (const r of indexed) {
      const resources = (typeof r.resources === "string" ? JSON.parse(r.resources) : r.resources) as { type: string; id: string }[];
      expect(String(r.ids).split(",")).toEqual(resources.map((x) => x.id).sort());
      expect(resources.map((x) => x.type)).toEqual(["key", "api"]);
    }
  });
});
