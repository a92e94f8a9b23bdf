// Raw analytics rows go to the database by LOAD DATA LOCAL INFILE of text that
// keyhold escapes itself (src/storage/analytics.ts, RawForm): every value must
// come back byte for byte, whatever it holds; a server that refuses LOAD DATA
// LOCAL (MySQL 8's default) must still get every batch, once, as INSERTs; and
// the server can be sent only the text keyhold offered, never a file.
import mysql from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { analyticsBatch, type RatelimitEvent, rawRowsInserted, tsvField, type VerificationEvent, writeAnalytics } from "../../src/storage/analytics.js";
import { commitInOneTrip } from "../../src/storage/sql.js";
import { useHarness } from "../harness.js";

type Rows = Array<Record<string, unknown>>;

// Every character LOAD DATA's text format gives a meaning to, and SQL's quotes.
const AWKWARD = ["tab\there", "line\nbreak", "cr\rhere", "back\\slash", "nul\0byte", "\\N", "\\", "quote'\"`", "ünïcødé 🔑", "\\t not a tab", ""];

const verification = (i: number, requestId: string, keySpaceId = "ks_load"): VerificationEvent => ({
  requestId,
  time: Date.UTC(2026, 10, 29, 9, 0, 0, i),
  workspaceId: "ws_load",
  keySpaceId,
  apiId: "api_load",
  keyId: `key_${i}`,
  identityId: i % 2 === 0 ? "" : "id_load",
  externalId: AWKWARD[i % AWKWARD.length] as string,
  outcome: "VALID",
  region: AWKWARD[(i + 3) % AWKWARD.length] as string,
  tags: [AWKWARD[i % AWKWARD.length] as string, "path=/v1/x"],
  spentCredits: i,
});

const ratelimit = (i: number, requestId: string): RatelimitEvent => ({
  requestId,
  time: Date.UTC(2026, 10, 29, 9, 0, 0, i),
  workspaceId: "ws_load",
  namespaceId: "ns_load",
  identifier: AWKWARD[i % AWKWARD.length] as string,
  passed: i % 3 !== 0,
});

/** Every column of the raw verification rows, as each event must come back (times within 2026-11-29 09:00:00). */
const VERIFICATION_ROWS =
  "SELECT request_id, DATE_FORMAT(`time`, '%Y-%m-%d %H:%i:%s.%f') AS t, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, region, tags, spent_credits FROM analytics_verifications";
/** Every verification recorded, rows and packed events alike (as key_verifications_v1 reads them, for every workspace). */
const EVERY_VERIFICATION =
  "SELECT request_id, `time`, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, region, tags, spent_credits FROM analytics_verifications UNION ALL " +
  "SELECT e.request_id, CAST(p.`time` + INTERVAL e.ms * 1000 MICROSECOND AS DATETIME(3)), p.workspace_id, p.key_space_id, p.api_id, p.key_id, p.identity_id, p.external_id, p.outcome, p.region, p.tags, e.spent_credits " +
  "FROM analytics_verifications_packed AS p CROSS JOIN JSON_TABLE(p.events, '$[*]' COLUMNS (request_id VARCHAR(64) PATH '$[0]', ms BIGINT PATH '$[1]', spent_credits BIGINT PATH '$[2]')) AS e";
const rowOf = (e: VerificationEvent) => ({
  request_id: e.requestId,
  t: `2026-11-29 09:00:00.${String(e.time % 1000).padStart(3, "0")}000`,
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

describe("raw analytics rows by LOAD DATA LOCAL", () => {
  const h = useHarness();
  const q = async (sql: string, params: unknown[] = []): Promise<Rows> => (await h.db.pool.query(sql, params))[0] as Rows;

  it("escapes only what the text format would read otherwise", () => {
    expect(tsvField("req_1ChWquiHVegBEkZds3NR12")).toBe("req_1ChWquiHVegBEkZds3NR12");
    expect(tsvField("a\tb\nc\rd\\e\0f")).toBe("a\\tb\\nc\\rd\\\\e\\0f");
    expect(tsvField("\\N")).toBe("\\\\N");
  });

  it("every value comes back as it was sent, in both raw tables, and the roll-ups count them", async () => {
    const v = AWKWARD.map((_, i) => verification(i, `req_v_${i}_${AWKWARD[i]}`));
    const r = AWKWARD.map((_, i) => ratelimit(i, `req_r_${i}`));
    await writeAnalytics(h.db.pool, v, r);
    expect(rawRowsInserted(h.db.pool)).toBe(false); // this MariaDB takes LOAD DATA LOCAL: it was used

    const got = await q(`${VERIFICATION_ROWS} WHERE workspace_id = 'ws_load' ORDER BY \`time\``);
    expect(got).toEqual(v.map(rowOf));
    expect(got.map((row) => JSON.parse(String(row.tags)))).toEqual(v.map((e) => e.tags));

    const rl = await q("SELECT request_id, identifier, passed FROM analytics_ratelimits WHERE workspace_id = 'ws_load' ORDER BY `time`");
    expect(rl).toEqual(r.map((e) => ({ request_id: e.requestId, identifier: e.identifier, passed: e.passed ? 1 : 0 })));

    const [month] = await q("SELECT SUM(count) AS n, SUM(spent_credits) AS credits FROM analytics_verifications_per_month WHERE workspace_id = 'ws_load'");
    expect(Number(month?.n)).toBe(v.length);
    expect(Number(month?.credits)).toBe(v.reduce((s, e) => s + e.spentCredits, 0));
  });

  it("rows that share a few tuples (a hot key's) send each tuple once, and every value still comes back as sent", async () => {
    // 44 verifications of 4 tuples (awkward values in every shared column a string can be), 44 checks of 4 identifiers.
    const v = Array.from({ length: 44 }, (_, i) => {
      const e = verification(i % 4, `req_hot_${i}_${AWKWARD[i % AWKWARD.length]}`, "ks_hot");
      return { ...e, time: Date.UTC(2026, 10, 29, 9, 0, 0, i), spentCredits: i, outcome: i % 4 === 3 ? "RATE_LIMITED" : "VALID" };
    });
    const r = Array.from({ length: 44 }, (_, i) => ({
      ...ratelimit(i % 4, `req_hot_rl_${i}`),
      workspaceId: "ws_hot",
      time: Date.UTC(2026, 10, 29, 9, 0, 1, i),
      passed: i % 5 !== 0,
    }));
    const [verifications] = analyticsBatch(v, [], "load");
    const [checks] = analyticsBatch([], r, "load");
    for (const st of [verifications, checks]) {
      expect(st?.sql).toContain("SET workspace_id = ELT(@t, ");
      const lines = String(st?.infile?.data).trimEnd().split("\n");
      expect(lines).toHaveLength(44);
      // request id, time, tuple number, the row's number: nothing else is sent a row.
      for (const line of lines) expect(line.split("\t")).toHaveLength(4);
    }
    // Keys seen once keep whole rows.
    expect(
      analyticsBatch(
        AWKWARD.map((_, i) => verification(i, `req_once_${i}`)),
        [],
        "load",
      )[0]?.sql,
    ).not.toContain("ELT(");

    await writeAnalytics(h.db.pool, v, []);
    await writeAnalytics(h.db.pool, [], r);
    expect(rawRowsInserted(h.db.pool)).toBe(false);
    const got = await q(`${VERIFICATION_ROWS} WHERE key_space_id = 'ks_hot' ORDER BY \`time\``);
    expect(got).toEqual(v.map(rowOf));
    const rl = await q(
      "SELECT request_id, workspace_id, namespace_id, identifier, passed FROM analytics_ratelimits WHERE workspace_id = 'ws_hot' ORDER BY `time`",
    );
    expect(rl).toEqual(
      r.map((e) => ({ request_id: e.requestId, workspace_id: "ws_hot", namespace_id: e.namespaceId, identifier: e.identifier, passed: e.passed ? 1 : 0 })),
    );
    const [rolled] = await q("SELECT SUM(count) AS n, SUM(spent_credits) AS credits FROM analytics_verifications_per_month WHERE key_space_id = 'ks_hot'");
    expect(Number(rolled?.n)).toBe(44);
    expect(Number(rolled?.credits)).toBe(v.reduce((s, e) => s + e.spentCredits, 0));
  });

  it("runs of one tuple (a hot key's), each broken by one column, keep every row's values and every sum", async () => {
    // A batch takes an event like the one before it (the same strings) as the same tuple and, in the
    // same minute, the same roll-up sum without looking either up: every column here breaks a run.
    const base: VerificationEvent = {
      requestId: "",
      time: 0,
      workspaceId: "ws_runs",
      keySpaceId: "ks_runs",
      apiId: "api_runs",
      keyId: "key_runs",
      identityId: "",
      externalId: "",
      outcome: "VALID",
      region: "local",
      tags: ["a=b"],
      spentCredits: 0,
    };
    // Runs alternate between the base and one change: one column tells each run from the last.
    const changes: Array<Partial<VerificationEvent>> = [
      { keyId: "key_runs_2" },
      { workspaceId: "ws_runs_2" },
      { outcome: "RATE_LIMITED" },
      { identityId: "id_runs" },
      { externalId: "user_runs" },
      { keySpaceId: "ks_runs_2" },
      { apiId: "api_runs_2" },
      { region: "eu" },
      { tags: [] },
      { tags: ["a=c"] },
    ];
    const t0 = Date.UTC(2026, 10, 29, 9, 0, 59, 990);
    const v: VerificationEvent[] = [];
    for (let run = 0; run < 40; run++) {
      const change = run % 2 === 0 ? {} : (changes[(run >> 1) % changes.length] as Partial<VerificationEvent>);
      // Runs of 1 to 7; several events a millisecond, and runs that cross a minute.
      for (let j = 0; j < 1 + (run % 7); j++) {
        const i = v.length;
        // Each event's tags an array of its own, as each request's are.
        v.push({
          ...base,
          ...change,
          tags: [...(change.tags ?? base.tags)],
          requestId: `req_runs_${i}`,
          time: t0 + Math.floor(i / 3),
          spentCredits: (i * 7) % 3,
        });
      }
    }
    const [raw] = analyticsBatch(v, [], "load");
    expect(raw?.sql).toContain("ELT(@t, ");
    await writeAnalytics(h.db.pool, v, []);

    // The base tuple's events (over PACK_AT_LEAST) are packed (analytics-packs.test.ts): read with the rows.
    expect(raw?.infile?.data.toString()).not.toContain("req_runs_0\t");
    const got = await q(
      `SELECT request_id, DATE_FORMAT(\`time\`, '%Y-%m-%d %H:%i:%s.%f') AS t, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, region, tags, spent_credits FROM (${EVERY_VERIFICATION}) AS v WHERE request_id LIKE 'req\\_runs\\_%' ORDER BY \`time\`, request_id`,
    );
    const iso = (t: number) => new Date(t).toISOString();
    const byRequest = (rows: Rows) => [...rows].sort((a, b) => Number(String(a.request_id).slice(9)) - Number(String(b.request_id).slice(9)));
    expect(byRequest(got)).toEqual(
      v.map((e) => ({
        ...rowOf(e),
        t: `${iso(e.time).slice(0, 10)} ${iso(e.time).slice(11, 23)}000`,
      })),
    );

    // The minute roll-up, summed here by its primary key's columns.
    const sums = new Map<string, { count: number; credits: number }>();
    for (const e of v) {
      const k = [iso(e.time - (e.time % 60_000)).slice(11, 19), e.workspaceId, e.keySpaceId, e.keyId, e.identityId, e.outcome, JSON.stringify(e.tags)].join(
        "|",
      );
      const sum = sums.get(k) ?? { count: 0, credits: 0 };
      sum.count++;
      sum.credits += e.spentCredits;
      sums.set(k, sum);
    }
    const minutes = await q(
      "SELECT DATE_FORMAT(`time`, '%H:%i:%s') AS t, workspace_id, key_space_id, key_id, identity_id, outcome, tags, count, spent_credits FROM analytics_verifications_per_minute WHERE workspace_id IN ('ws_runs', 'ws_runs_2')",
    );
    expect(
      new Map(
        minutes.map((m) => [
          [m.t, m.workspace_id, m.key_space_id, m.key_id, m.identity_id, m.outcome, m.tags].join("|"),
          { count: Number(m.count), credits: Number(m.spent_credits) },
        ]),
      ),
    ).toEqual(sums);
    expect(sums.size).toBeGreaterThan(changes.length); // both minutes hold several identities

    // Rate-limit checks in runs too, each told from the last by its workspace, its namespace or its identifier.
    const r: RatelimitEvent[] = [];
    for (let run = 0; run < 12; run++)
      for (let j = 0; j < 1 + (run % 5); j++)
        r.push({
          requestId: `req_runs_rl_${r.length}`,
          time: t0 + r.length,
          workspaceId: run % 6 === 5 ? "ws_runs_2" : "ws_runs",
          namespaceId: run % 6 === 1 ? "ns_runs_2" : "ns_runs",
          identifier: run % 6 === 3 ? "user_1" : "user_0",
          passed: j % 2 === 0,
        });
    await writeAnalytics(h.db.pool, [], r);
    const checks = await q(
      "SELECT request_id, workspace_id, namespace_id, identifier, passed FROM analytics_ratelimits WHERE workspace_id IN ('ws_runs', 'ws_runs_2')",
    );
    expect(new Set(checks.map((c) => JSON.stringify([c.request_id, c.workspace_id, c.namespace_id, c.identifier, c.passed])))).toEqual(
      new Set(r.map((e) => JSON.stringify([e.requestId, e.workspaceId, e.namespaceId, e.identifier, e.passed ? 1 : 0]))),
    );
    const limitSums = await q(
      "SELECT DATE_FORMAT(`time`, '%H:%i:%s') AS t, workspace_id, namespace_id, identifier, passed, total FROM analytics_ratelimits_per_minute WHERE workspace_id IN ('ws_runs', 'ws_runs_2')",
    );
    const want = new Map<string, { passed: number; total: number }>();
    for (const e of r) {
      const k = [iso(e.time - (e.time % 60_000)).slice(11, 19), e.workspaceId, e.namespaceId, e.identifier].join("|");
      const sum = want.get(k) ?? { passed: 0, total: 0 };
      sum.passed += e.passed ? 1 : 0;
      sum.total++;
      want.set(k, sum);
    }
    expect(
      new Map(limitSums.map((m) => [[m.t, m.workspace_id, m.namespace_id, m.identifier].join("|"), { passed: Number(m.passed), total: Number(m.total) }])),
    ).toEqual(want);
  });

  it("a server that refuses LOAD DATA LOCAL gets the same batch once as INSERTs, and every later one too", async () => {
    // A client without the LOCAL_FILES capability is refused exactly as a server with local_infile off refuses
    // (MariaDB 4166; MySQL 8's default local_infile=OFF answers 3948).
    const pool = mysql.createPool({ uri: String(h.config.databaseUrl), flags: ["-LOCAL_FILES"], multipleStatements: true, connectionLimit: 2 });
    try {
      const first = [verification(1, "req_refused_1", "ks_refused"), verification(2, "req_refused_2", "ks_refused")];
      await writeAnalytics(pool, first, [ratelimit(1, "req_refused_rl")]);
      expect(rawRowsInserted(pool)).toBe(true);
      await writeAnalytics(pool, [verification(3, "req_refused_3", "ks_refused")], []);
      const got = await q("SELECT request_id, external_id FROM analytics_verifications WHERE key_space_id = 'ks_refused' ORDER BY `time`");
      expect(got).toEqual([
        { request_id: "req_refused_1", external_id: AWKWARD[1] },
        { request_id: "req_refused_2", external_id: AWKWARD[2] },
        { request_id: "req_refused_3", external_id: AWKWARD[3] },
      ]);
      expect(await q("SELECT request_id FROM analytics_ratelimits WHERE request_id = 'req_refused_rl'")).toHaveLength(1);
      const [rolled] = await q("SELECT SUM(count) AS n FROM analytics_verifications_per_month WHERE key_space_id = 'ks_refused'");
      expect(Number(rolled?.n)).toBe(3);
    } finally {
      await pool.end();
    }
  });

  it("leaves no listener behind on the connection, batch after batch, whatever kinds a batch holds", async () => {
    // mysql2 (3.24.5) removes the socket listeners of a query's last LOCAL INFILE only: a batch
    // with two LOADs would leave a pair behind on its pooled connection at every write.
    const pool = mysql.createPool({ uri: String(h.config.databaseUrl), multipleStatements: true, connectionLimit: 1 });
    const socket = () => {
      const conns = (pool as unknown as { pool: { _allConnections: { toArray(): Array<{ stream: NodeJS.EventEmitter }> } } }).pool._allConnections.toArray();
      expect(conns).toHaveLength(1);
      return conns[0]?.stream as NodeJS.EventEmitter;
    };
    try {
      await writeAnalytics(pool, [verification(0, "req_listen_0", "ks_listen")], []);
      const pause = socket().listenerCount("pause");
      const drain = socket().listenerCount("drain");
      for (let i = 1; i <= 6; i++) {
        const both = i % 3 === 0;
        await writeAnalytics(
          pool,
          i % 3 === 2 ? [] : [verification(i, `req_listen_${i}`, "ks_listen")],
          both || i % 3 === 2 ? [ratelimit(i, `req_listen_rl_${i}`)] : [],
        );
      }
      expect(socket().listenerCount("pause")).toBe(pause);
      expect(socket().listenerCount("drain")).toBe(drain);
      expect(await q("SELECT COUNT(*) AS n FROM analytics_verifications WHERE key_space_id = 'ks_listen'")).toEqual([{ n: 5 }]);
      expect(await q("SELECT COUNT(*) AS n FROM analytics_ratelimits WHERE request_id LIKE 'req_listen_rl_%'")).toEqual([{ n: 4 }]);
    } finally {
      await pool.end();
    }
  });

  it("a LOAD DATA LOCAL naming anything but the text offered fails, and reads no file", async () => {
    await h.db.pool.query("CREATE TABLE load_guard (line TEXT NOT NULL)");
    const offered = { name: "load_guard", data: Buffer.from("offered\n") };
    await expect(
      commitInOneTrip(h.db.pool, [{ sql: "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE load_guard (line)", params: [], text: true, infile: offered }]),
    ).rejects.toThrow(/asked for "\/etc\/hostname", which this query did not offer/);
    expect(await q("SELECT line FROM load_guard")).toEqual([]);
    await commitInOneTrip(h.db.pool, [{ sql: "LOAD DATA LOCAL INFILE 'load_guard' INTO TABLE load_guard (line)", params: [], text: true, infile: offered }]);
    expect(await q("SELECT line FROM load_guard")).toEqual([{ line: "offered" }]);
  });

  it("a LOAD DATA LOCAL refused that way drops its connection: no ROLLBACK sent to take the batch's late answers", async () => {
    // mysql2 (3.24.5) ends a refused file with an empty packet and settles the query at
    // the LOAD's answer, though the statements after it (the COMMIT) still answer: a
    // ROLLBACK sent then took their answers, and the next query on the pooled
    // connection could take the ROLLBACK's (an OK packet for a SELECT; once seen in CI).
    const pool = mysql.createPool({ uri: String(h.config.databaseUrl), multipleStatements: true, connectionLimit: 1 });
    const sent: string[] = [];
    let destroyed = 0;
    // The pool as commitInOneTrip sees it, each connection's queries and destroy() noted.
    const noting = {
      getConnection: async () => {
        const conn = await pool.getConnection();
        return new Proxy(conn, {
          get(target, prop, receiver) {
            if (prop === "query")
              return (q: string | { sql: string }, ...rest: unknown[]) => {
                sent.push(typeof q === "string" ? q : q.sql);
                return (target.query as (...a: unknown[]) => unknown)(q, ...rest);
              };
            if (prop === "destroy")
              return () => {
                destroyed++;
                target.destroy();
              };
            return Reflect.get(target, prop, receiver);
          },
        });
      },
    } as unknown as Parameters<typeof commitInOneTrip>[0];
    try {
      await pool.query("CREATE TABLE load_step (line TEXT NOT NULL)");
      const offered = { name: "load_step", data: Buffer.from("offered\n") };
      await expect(
        commitInOneTrip(noting, [
          { sql: "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE load_step (line)", params: [], text: true, infile: offered },
          // The answers after the LOAD's held back a moment, past the client's next steps.
          { sql: "DO SLEEP(0.2)", params: [], text: true },
        ]),
      ).rejects.toThrow(/which this query did not offer/);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^START TRANSACTION;\nLOAD DATA LOCAL/);
      expect(destroyed).toBe(1);
      for (let i = 0; i < 3; i++) expect((await pool.query("SELECT ? AS n", [i]))[0]).toEqual([{ n: i }]);
      expect((await pool.query("SELECT line FROM load_step"))[0]).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
