// A hot key's verifications are written packed (src/storage/analytics.ts,
// PACK_AT_LEAST; migrations/0015): one row of analytics_verifications_packed
// for a batch's events of one tuple. Users read them through
// key_verifications_v1 as if each were a row: these check that every event
// comes back once with every value as recorded, whatever mix of packs and rows
// a batch made; that a user's bounds on `time`, pushed down to the packs
// (src/storage/analytics-sql/query.ts, boundPacks), never change an answer; and
// that the retention sweep deletes a pack only once its last event is old. A
// hot identifier's rate-limit checks are packed the same way
// (analytics_ratelimits_packed, migrations/0016).
import { beforeAll, describe, expect, it } from "vitest";
import { sweepRawAnalytics } from "../../src/domain/analytics/retention.js";
import { analyticsBatch, PACK_AT_LEAST, PACK_AT_MOST, type RatelimitEvent, type VerificationEvent, writeAnalytics } from "../../src/storage/analytics.js";
import { type AnalyticsScope, compileAnalyticsQuery } from "../../src/storage/analytics-sql/query.js";
import { useHarness } from "../harness.js";

type Rows = Array<Record<string, unknown>>;

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0, 0);

const event = (i: number, over: Partial<VerificationEvent> = {}): VerificationEvent => ({
  requestId: `req_pk_${i}`,
  time: T0 + i * 7,
  workspaceId: "ws_pk",
  keySpaceId: "ks_pk",
  apiId: "api_pk",
  keyId: "key_hot",
  identityId: "",
  externalId: "",
  outcome: "VALID",
  region: "local",
  tags: [],
  spentCredits: i % 3,
  ...over,
});

/** DATETIME(3) text of a Unix ms time, as the pool (dateStrings) gives it back. */
const text = (t: number): string => {
  const iso = new Date(t).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
};

const COLUMNS = "request_id, time, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, region, tags, spent_credits";
const rowOf = (e: VerificationEvent) => ({
  request_id: e.requestId,
  time: text(e.time),
  workspace_id: e.workspaceId,
  key_space_id: e.keySpaceId,
  api_id: e.apiId,
  key_id: e.keyId,
  identity_id: e.identityId,
  external_id: e.externalId,
  outcome: e.outcome,
  region: e.region,
  tags: JSON.stringify(e.tags),
  spent_credits: e.spentCredits,
});
const byRequest = (a: Record<string, unknown>, b: Record<string, unknown>) => (String(a.request_id) < String(b.request_id) ? -1 : 1);

describe("a hot key's verifications, packed", () => {
  const h = useHarness();
  const q = async (sql: string, params: unknown[] = []): Promise<Rows> => (await h.db.pool.query(sql, params))[0] as Rows;
  const read = async (query: string, scope: AnalyticsScope): Promise<Rows> => {
    const rows = await q(compileAnalyticsQuery(query, "verifications", scope, { maxRows: 100_000 }).sql);
    return rows.map((r) => ({ ...r, ...(r.spent_credits === undefined ? {} : { spent_credits: Number(r.spent_credits) }) }));
  };

  it("packs only the tuples with PACK_AT_LEAST events a batch, at most PACK_AT_MOST a pack, and every event comes back once as recorded", async () => {
    const ws = { workspaceId: "ws_pk_mix" };
    const v: VerificationEvent[] = [];
    // A hot key (over two packs' worth), a warm one (just enough), one just short, and keys seen once, interleaved.
    for (let i = 0; i < PACK_AT_MOST + 40; i++) {
      v.push(event(v.length, { ...ws, keyId: "key_hot", spentCredits: i % 5 }));
      if (i < PACK_AT_LEAST) v.push(event(v.length, { ...ws, keyId: "key_warm", outcome: "RATE_LIMITED", tags: ["path=/a", 'it\'s "q"'] }));
      if (i < PACK_AT_LEAST - 1) v.push(event(v.length, { ...ws, keyId: "key_short" }));
      if (i % 100 === 0) v.push(event(v.length, { ...ws, keyId: `key_once_${i}`, identityId: "id_1", externalId: "user 1" }));
    }
    // Several events in one millisecond, and one earlier than those before it (the batch's order is not time's).
    for (let i = 0; i < 3; i++) v.push(event(v.length, { ...ws, time: T0 + 99_999 }));
    v.push(event(v.length, { ...ws, time: T0 - 5 }));

    const statements = analyticsBatch(v, [], "load");
    const packed = statements.find((s) => s.sql.startsWith("INSERT INTO analytics_verifications_packed"));
    expect(packed?.sql.match(/\),\('/g)?.length, "three packs: the hot key's two, the warm key's one").toBe(2);
    const rows = statements.find((s) => s.sql.startsWith("LOAD DATA"));
    const hot = v.filter((e) => e.keyId === "key_hot" || e.keyId === "key_warm").length;
    expect(String(rows?.infile?.data).trimEnd().split("\n")).toHaveLength(v.length - hot);

    await writeAnalytics(h.db.pool, v, []);
    const packs = await q("SELECT key_id, n, `time`, last_time FROM analytics_verifications_packed WHERE workspace_id = 'ws_pk_mix' ORDER BY key_id, n DESC");
    const hotTimes = v.filter((e) => e.keyId === "key_hot").map((e) => e.time);
    expect(packs).toEqual([
      { key_id: "key_hot", n: PACK_AT_MOST, time: text(T0), last_time: text(Math.max(...hotTimes.slice(0, PACK_AT_MOST))) },
      { key_id: "key_hot", n: hotTimes.length - PACK_AT_MOST, time: text(T0 - 5), last_time: text(T0 + 99_999) },
      { key_id: "key_warm", n: PACK_AT_LEAST, time: expect.any(String), last_time: expect.any(String) },
    ]);

    const got = await read(`SELECT ${COLUMNS} FROM key_verifications_v1`, ws);
    expect(got.sort(byRequest)).toEqual(v.map(rowOf).sort(byRequest));
    // The roll-ups count every event, packed or not.
    const [month] = await q("SELECT SUM(count) AS n, SUM(spent_credits) AS c FROM analytics_verifications_per_month WHERE workspace_id = 'ws_pk_mix'");
    expect([Number(month?.n), Number(month?.c)]).toEqual([v.length, v.reduce((s, e) => s + e.spentCredits, 0)]);
  });

  it("request ids that JSON or SQL would read otherwise come back as sent", async () => {
    const ws = { workspaceId: "ws_pk_ids" };
    const odd = ["quote'\"`", "back\\slash", "tab\there", "line\nbreak", "ünïcødé 🔑", '["x",1]', "\\u0041"];
    const v = Array.from({ length: PACK_AT_LEAST + odd.length }, (_, i) => event(i, { ...ws, requestId: `req_${odd[i % odd.length]}_${i}` }));
    await writeAnalytics(h.db.pool, v, []);
    expect(await q("SELECT n FROM analytics_verifications_packed WHERE workspace_id = 'ws_pk_ids'")).toEqual([{ n: v.length }]);
    const got = await read(`SELECT ${COLUMNS} FROM key_verifications_v1`, ws);
    expect(got.sort(byRequest)).toEqual(v.map(rowOf).sort(byRequest));
  });

  describe("bounds on time, pushed down to the packs, give the answers of the events themselves", () => {
    const ws = "ws_pk_bounds";
    // Three batches of a hot key, 1 s apart, 200 events each (2 ms apart), and rows of a cold key between them.
    const v: VerificationEvent[] = [];
    for (let b = 0; b < 3; b++) {
      const batch = Array.from({ length: 200 }, (_, i) => event(b * 1000 + i, { workspaceId: ws, time: T0 + b * 1000 + i * 2 }));
      batch.push(event(b * 1000 + 500, { workspaceId: ws, keyId: "key_cold", time: T0 + b * 1000 + 600 }));
      v.push(...batch);
    }
    beforeAll(async () => {
      for (let b = 0; b < 3; b++) await writeAnalytics(h.db.pool, v.slice(b * 201, b * 201 + 201), []);
      expect(await q(`SELECT COUNT(*) AS n FROM analytics_verifications_packed WHERE workspace_id = '${ws}'`)).toEqual([{ n: 3 }]);
    });
    const ids = (pick: (e: VerificationEvent) => boolean) =>
      v
        .filter(pick)
        .map((e) => e.requestId)
        .sort();
    const at = (ms: number) => `'${text(T0 + ms)}'`;

    // Each bound on the first and last event of a pack, inside one, and between two.
    const cases: Array<[string, (e: VerificationEvent) => boolean, boolean]> = [];
    for (const ms of [0, 398, 1000, 1001, 1398, 1600, 1700, 2398, 2399]) {
      const t = T0 + ms;
      cases.push(
        [`time >= ${at(ms)}`, (e) => e.time >= t, true],
        [`time > ${at(ms)}`, (e) => e.time > t, true],
        [`time < ${at(ms)}`, (e) => e.time < t, true],
        [`time <= ${at(ms)}`, (e) => e.time <= t, true],
        [`time = ${at(ms)}`, (e) => e.time === t, true],
        [`${at(ms)} < time`, (e) => e.time > t, true],
        [`${at(ms)} >= time`, (e) => e.time <= t, true],
      );
    }
    cases.push(
      [`time BETWEEN ${at(1001)} AND ${at(1398)}`, (e) => e.time >= T0 + 1001 && e.time <= T0 + 1398, true],
      [
        `key_id = 'key_hot' AND time > TIMESTAMP ${at(1500)} AND time < ${at(2100)}`,
        (e) => e.keyId === "key_hot" && e.time > T0 + 1500 && e.time < T0 + 2100,
        true,
      ],
      [`time > TIMESTAMP ${at(1500)} - INTERVAL 1 SECOND`, (e) => e.time > T0 + 500, true],
      [`TIME >= ${at(1001)}`, (e) => e.time >= T0 + 1001, true],
      [`time < now() + INTERVAL 1 DAY AND time > today() - INTERVAL 3650 DAY`, () => true, true],
      // Not copied into our CTE: expressions that could fail there (an integer overflow), numbers.
      [`time > 20261129090001`, (e) => e.time > T0 + 1000, false],
      // Not bounds: an OR, a NOT, a column on both sides.
      [`time > ${at(2000)} OR key_id = 'key_cold'`, (e) => e.time > T0 + 2000 || e.keyId === "key_cold", false],
      [`NOT (time < ${at(2000)})`, (e) => e.time >= T0 + 2000, false],
      [`time > time - INTERVAL 1 SECOND`, () => true, false],
    );

    it.each(cases)("WHERE %s", async (where, pick, pushed) => {
      const query = `SELECT request_id FROM key_verifications_v1 WHERE ${where}`;
      const sql = compileAnalyticsQuery(query, "verifications", { workspaceId: ws }, { maxRows: 10_000 }).sql;
      expect(/`p`\.`(last_)?time` [<>=]/.test(sql), sql).toBe(pushed);
      expect((await read(query, { workspaceId: ws })).map((r) => r.request_id).sort()).toEqual(ids(pick));
    });

    it("two references with their own bounds read what each needs; one without bounds reads every pack", async () => {
      const both = `SELECT request_id FROM key_verifications_v1 WHERE time < ${at(100)} UNION ALL SELECT k.request_id FROM key_verifications_v1 AS k WHERE k.time > ${at(2300)}`;
      expect(compileAnalyticsQuery(both, "verifications", { workspaceId: ws }, { maxRows: 10_000 }).sql).toContain(" OR ");
      expect((await read(both, { workspaceId: ws })).map((r) => r.request_id).sort()).toEqual(ids((e) => e.time < T0 + 100 || e.time > T0 + 2300));

      const one = `SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE time < ${at(100)} UNION ALL SELECT COUNT(*) FROM key_verifications_v1 AS k WHERE k.request_id <> ''`;
      expect(compileAnalyticsQuery(one, "verifications", { workspaceId: ws }, { maxRows: 10_000 }).sql).not.toMatch(/`p`\.`(last_)?time` [<>=]/);
      expect((await read(one, { workspaceId: ws })).map((r) => Number(r.n))).toEqual([ids((e) => e.time < T0 + 100).length, v.length]);

      // A join of two references, one of them bounded: every pack is read.
      const join = `SELECT a.request_id FROM key_verifications_v1 AS a JOIN key_verifications_v1 AS b ON a.request_id = b.request_id WHERE a.time >= ${at(2000)}`;
      expect(compileAnalyticsQuery(join, "verifications", { workspaceId: ws }, { maxRows: 10_000 }).sql).not.toMatch(/`p`\.`(last_)?time` [<>=]/);
      expect((await read(join, { workspaceId: ws })).map((r) => r.request_id).sort()).toEqual(ids((e) => e.time >= T0 + 2000));
    });
  });

  it("a hot identifier's rate-limit checks likewise: packed, read back through ratelimits_v1 once each, bounds kept, swept when old", async () => {
    const check = (i: number, over: Partial<RatelimitEvent> = {}): RatelimitEvent => ({
      requestId: `req_rl_${i}`,
      time: T0 + i * 3,
      workspaceId: "ws_pk_rl",
      namespaceId: "ns_pk",
      identifier: "user 'hot'",
      passed: i % 3 !== 0,
      ...over,
    });
    const r = Array.from({ length: PACK_AT_LEAST + 20 }, (_, i) => check(i));
    for (let i = 0; i < 5; i++) r.push(check(100 + i, { identifier: `cold_${i}` }));
    const statements = analyticsBatch([], r, "load");
    expect(statements.map((st) => st.sql)).toEqual([
      expect.stringMatching(/^LOAD DATA LOCAL INFILE 'analytics_ratelimits'/),
      expect.stringMatching(/^INSERT INTO analytics_ratelimits_packed /),
      ...["minute", "hour", "day", "month"].map(() => expect.stringMatching(/^INSERT INTO analytics_ratelimits_per_/)),
    ]);
    await writeAnalytics(h.db.pool, [], r);
    expect(await q("SELECT identifier, n FROM analytics_ratelimits_packed WHERE workspace_id = 'ws_pk_rl'")).toEqual([
      { identifier: "user 'hot'", n: PACK_AT_LEAST + 20 },
    ]);
    const scope = { workspaceId: "ws_pk_rl" };
    const rows = async (query: string) =>
      (await q(compileAnalyticsQuery(query, "ratelimits", scope, { maxRows: 10_000 }).sql)).sort((a, b) =>
        String(a.request_id) < String(b.request_id) ? -1 : 1,
      );
    const rowOfCheck = (e: RatelimitEvent) => ({
      request_id: e.requestId,
      time: text(e.time),
      workspace_id: e.workspaceId,
      namespace_id: e.namespaceId,
      identifier: e.identifier,
      passed: e.passed ? 1 : 0,
    });
    const all = "SELECT request_id, time, workspace_id, namespace_id, identifier, passed FROM ratelimits_v1";
    expect(await rows(all)).toEqual(r.map(rowOfCheck).sort((a, b) => (a.request_id < b.request_id ? -1 : 1)));
    const since = `${all} WHERE time >= '${text(T0 + 60)}'`;
    expect(compileAnalyticsQuery(since, "ratelimits", scope, { maxRows: 10 }).sql).toContain("(`p`.`last_time` >= ");
    expect(await rows(since)).toEqual(
      r
        .filter((e) => e.time >= T0 + 60)
        .map(rowOfCheck)
        .sort((a, b) => (a.request_id < b.request_id ? -1 : 1)),
    );
    // T0 is days before now: a cut at now takes the pack and the rows.
    expect(await sweepRawAnalytics(h.db.pool, Date.now())).toBeGreaterThanOrEqual(1 + 5);
    expect(await q("SELECT n FROM analytics_ratelimits_packed WHERE workspace_id = 'ws_pk_rl'")).toEqual([]);
  });

  it("a bound that fails fails only where the user's own WHERE does", async () => {
    // Our CTE's bound would be evaluated even under 1 = 0, or for a CTE the query never reads.
    const overflow = "18446744073709551615 + 1";
    for (const query of [
      `SELECT count() AS n FROM key_verifications_v1 WHERE 1 = 0 AND time > ${overflow}`,
      `WITH u AS (SELECT * FROM key_verifications_v1 WHERE time > ${overflow}) SELECT count() AS n FROM key_verifications_v1 WHERE 1 = 0`,
    ]) {
      expect(compileAnalyticsQuery(query, "verifications", { workspaceId: "ws_pk_mix" }, { maxRows: 10 }).sql).not.toMatch(/`p`\.`(last_)?time` [<>=]/);
      expect(await read(query, { workspaceId: "ws_pk_mix" })).toEqual([{ n: 0 }]);
    }
  });

  it("the retention sweep deletes a pack once its last event is older than the cut, and not before", async () => {
    const now = Date.now();
    const ws = { workspaceId: "ws_pk_ret" };
    // One pack wholly old, one across the cut.
    const old = Array.from({ length: PACK_AT_LEAST }, (_, i) => event(i, { ...ws, requestId: `old_${i}`, time: now - 40 * 86_400_000 + i }));
    const across = Array.from({ length: PACK_AT_LEAST }, (_, i) => event(i, { ...ws, requestId: `across_${i}`, time: now - 30 * 86_400_000 - 10 + i }));
    await writeAnalytics(h.db.pool, old, []);
    await writeAnalytics(h.db.pool, across, []);
    expect(await sweepRawAnalytics(h.db.pool, now - 30 * 86_400_000)).toBe(1);
    expect(await q("SELECT n FROM analytics_verifications_packed WHERE workspace_id = 'ws_pk_ret'")).toEqual([{ n: PACK_AT_LEAST }]);
    expect((await read("SELECT request_id FROM key_verifications_v1", ws)).map((r) => r.request_id).sort()).toEqual(across.map((e) => e.requestId).sort());
    expect(await sweepRawAnalytics(h.db.pool, now - 30 * 86_400_000 + 100)).toBe(1);
    expect(await q("SELECT n FROM analytics_verifications_packed WHERE workspace_id = 'ws_pk_ret'")).toEqual([]);

    // Packs go a few a DELETE (a 250th of the rows' batch: here one), every one of them in the end.
    for (let b = 0; b < 3; b++)
      await writeAnalytics(
        h.db.pool,
        old.map((e) => ({ ...e, requestId: `${e.requestId}_${b}` })),
        [],
      );
    expect(await sweepRawAnalytics(h.db.pool, now - 30 * 86_400_000, undefined, 250)).toBe(3);
    expect(await q("SELECT n FROM analytics_verifications_packed WHERE workspace_id = 'ws_pk_ret'")).toEqual([]);
  });
});
