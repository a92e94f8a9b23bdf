// The analytics query compiler, without a database: what it writes, what it
// refuses and why. test/integration/analytics-query-db.test.ts runs compiled
// queries on the real server; test/fuzz/analytics-query.test.ts throws random
// and hostile queries at it.
import { describe, expect, it } from "vitest";
import {
  type AnalyticsFamily,
  AnalyticsQueryError,
  type AnalyticsScope,
  compileAnalyticsQuery,
  MAX_NESTING,
  MAX_QUERY_LENGTH,
  quote,
  rewriteCountCalls,
} from "./query.js";

const WS: AnalyticsScope = { workspaceId: "ws_1" };
const compile = (q: string, scope: AnalyticsScope = WS, family: AnalyticsFamily = "verifications", maxRows = 100) =>
  compileAnalyticsQuery(q, family, scope, { maxRows });
/** Where the parenthesis open at `from` closes, strings ('…', with '' and \ escapes) skipped. */
const closing = (sql: string, from: number): number => {
  let depth = 0;
  for (let i = from; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'") {
      for (i++; i < sql.length && !(sql[i] === "'" && sql[i + 1] !== "'"); i++) if (sql[i] === "\\" || sql[i] === "'") i++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  throw new Error(`unbalanced: ${sql}`);
};
/** The compiled query without our CTEs (one per table read, first, each reading its physical table filtered by WS's workspace). */
const body = (q: string, family: AnalyticsFamily = "verifications", maxRows = 100): string => {
  const { sql, tables } = compile(q, WS, family, maxRows);
  if (tables.length === 0) return sql;
  let rest = sql.slice("WITH ".length);
  for (const t of tables) {
    expect(rest.startsWith(`\`${t}\` AS (SELECT `), sql).toBe(true);
    const end = closing(rest, rest.indexOf("("));
    expect(rest.slice(0, end)).toMatch(/ FROM `analytics_[a-z_]+` FORCE INDEX \(PRIMARY\) WHERE `workspace_id` = 'ws_1'/);
    rest = rest.slice(end + 1).replace(/^, /, "");
  }
  return rest.startsWith(" ") ? rest.slice(1) : `WITH ${rest}`;
};

/** The error compile throws, as {code, message}. */
function refusal(q: string, family: AnalyticsFamily = "verifications"): { code: string; message: string } {
  try {
    compile(q, WS, family);
  } catch (err) {
    expect(err).toBeInstanceOf(AnalyticsQueryError);
    const e = err as AnalyticsQueryError;
    return { code: e.code, message: e.message };
  }
  throw new Error(`compiled: ${q}`);
}

const RAW =
  "`request_id`, `time`, `workspace_id`, `key_space_id`, `api_id`, `key_id`, `identity_id`, `external_id`, `outcome`, `region`, `tags`, `spent_credits`";

const UNPACKED =
  "`e`.`request_id`, CAST(`p`.`time` + INTERVAL `e`.`ms` * 1000 MICROSECOND AS DATETIME(3)) AS `time`, `p`.`workspace_id`, `p`.`key_space_id`, `p`.`api_id`, `p`.`key_id`, `p`.`identity_id`, `p`.`external_id`, `p`.`outcome`, `p`.`region`, `p`.`tags`, `e`.`spent_credits`";

describe("the workspace's rows only", () => {
  // The security decision: every public table the query names is a CTE over the physical table, filtered by workspace.
  it("reads a public table through a CTE filtered by workspace", () => {
    expect(compile("SELECT count() FROM key_verifications_v1")).toEqual({
      sql:
        `WITH \`key_verifications_v1\` AS (SELECT ${RAW} FROM \`analytics_verifications\` FORCE INDEX (PRIMARY) WHERE \`workspace_id\` = 'ws_1'` +
        // And a hot key's events, packed (migrations/0015), one row each as the raw table has them, by the same filter.
        ` UNION ALL SELECT ${UNPACKED} FROM \`analytics_verifications_packed\` AS \`p\` FORCE INDEX (PRIMARY)` +
        " CROSS JOIN JSON_TABLE(`p`.`events`, '$[*]' COLUMNS (`request_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]', `ms` BIGINT PATH '$[1]', `spent_credits` BIGINT PATH '$[2]')) AS `e`" +
        " WHERE `p`.`workspace_id` = 'ws_1') SELECT COUNT(*) FROM `key_verifications_v1` LIMIT 101",
      tables: ["key_verifications_v1"],
    });
  });

  it("filters by the key spaces the grants name, and an empty list reads nothing", () => {
    expect(compile("SELECT count() FROM key_verifications_per_day_v1", { workspaceId: "ws_1", keySpaceIds: ["ks_1", "ks_2"] }).sql).toContain(
      "FROM `analytics_verifications_per_day` FORCE INDEX (PRIMARY) WHERE `workspace_id` = 'ws_1' AND `key_space_id` IN ('ks_1', 'ks_2'))",
    );
    expect(compile("SELECT count() FROM key_verifications_v1", { workspaceId: "ws_1", keySpaceIds: [] }).sql).toContain(
      "WHERE `workspace_id` = 'ws_1' AND 1 = 0 UNION ALL ",
    );
    expect(compile("SELECT count() FROM key_verifications_v1", { workspaceId: "ws_1", keySpaceIds: [] }).sql).toContain(
      "WHERE `p`.`workspace_id` = 'ws_1' AND 1 = 0)",
    );
    expect(compile("SELECT count() FROM key_verifications_v1", { workspaceId: "ws_1", keySpaceIds: ["ks_1"] }).sql).toContain(
      "WHERE `p`.`workspace_id` = 'ws_1' AND `p`.`key_space_id` IN ('ks_1'))",
    );
  });

  it("filters rate limits by namespace, and ignores key spaces there", () => {
    const { sql, tables } = compile(
      "SELECT sum(passed), sum(total) FROM ratelimits_per_hour_v1",
      { workspaceId: "ws_1", keySpaceIds: [], namespaceIds: ["ns_1"] },
      "ratelimits",
    );
    expect(tables).toEqual(["ratelimits_per_hour_v1"]);
    expect(sql).toBe(
      "WITH `ratelimits_per_hour_v1` AS (SELECT `time`, `workspace_id`, `namespace_id`, `identifier`, `passed`, `total` FROM `analytics_ratelimits_per_hour` FORCE INDEX (PRIMARY) WHERE `workspace_id` = 'ws_1' AND `namespace_id` IN ('ns_1')) SELECT COALESCE(SUM(`passed`), 0), COALESCE(SUM(`total`), 0) FROM `ratelimits_per_hour_v1` LIMIT 101",
    );
  });

  it("defines one CTE per table read, wherever it is read, before the user's own", () => {
    const { sql, tables } = compile(
      "WITH mine AS (SELECT key_id FROM key_verifications_per_hour_v1) SELECT * FROM mine WHERE key_id IN (SELECT key_id FROM key_verifications_v1)",
    );
    expect(tables).toEqual(["key_verifications_per_hour_v1", "key_verifications_v1"]);
    expect(sql.indexOf("`key_verifications_per_hour_v1` AS (")).toBeLessThan(sql.indexOf("`mine` AS ("));
    expect(sql.indexOf("`key_verifications_v1` AS (")).toBeLessThan(sql.indexOf("`mine` AS ("));
    expect(sql.match(/ AS \(SELECT /g)).toHaveLength(3);
  });

  it("quotes scope values so that they stay one literal", () => {
    const { sql } = compile("SELECT 1 FROM key_verifications_v1", { workspaceId: "ws_'1\\", keySpaceIds: ["a'b"] });
    expect(sql).toContain("`workspace_id` = 'ws_''1\\\\' AND `key_space_id` IN ('a''b')");
  });

  it("reads no table for a query without FROM", () => {
    expect(compile("SELECT 1 + 1 AS two")).toEqual({ sql: "SELECT (1 + 1) AS `two` LIMIT 101", tables: [] });
  });

  it("never selects the physical tables' own columns", () => {
    expect(compile("SELECT * FROM key_verifications_per_minute_v1").sql).not.toMatch(/tags_hash|`pk`/);
    expect(refusal("SELECT pk FROM key_verifications_v1").message).toMatch(
      /^column pk is not allowed; the columns of key_verifications_v1 are request_id, time, /,
    );
    expect(refusal("SELECT tags_hash FROM key_verifications_per_hour_v1").message).toMatch(/^column tags_hash is not allowed/);
  });

  it("refuses the physical tables, naming the public one to use", () => {
    expect(refusal("SELECT * FROM analytics_verifications")).toEqual({
      code: "invalid_analytics_table",
      message: "table analytics_verifications is not allowed; use key_verifications_v1 (in FROM)",
    });
    expect(refusal("SELECT 1 UNION SELECT * FROM analytics_verifications_per_day").message).toBe(
      "table analytics_verifications_per_day is not allowed; use key_verifications_per_day_v1 (in FROM)",
    );
    expect(refusal("SELECT * FROM key_verifications_v1 WHERE key_id IN (SELECT key_id FROM ANALYTICS_VERIFICATIONS)").code).toBe("invalid_analytics_table");
  });

  it("refuses the other family's tables", () => {
    expect(refusal("SELECT * FROM ratelimits_v1")).toEqual({
      code: "invalid_analytics_table",
      message: "table ratelimits_v1 is not allowed; it is a ratelimits table; this endpoint reads verifications tables (in FROM)",
    });
    expect(refusal("SELECT * FROM key_verifications_v1", "ratelimits").code).toBe("invalid_analytics_table");
  });

  it("refuses other tables, databases and schemas", () => {
    for (const q of [
      "SELECT * FROM `keys`",
      "SELECT * FROM information_schema.tables",
      "SELECT * FROM mysql.user",
      "SELECT * FROM performance_schema.threads",
      "SELECT * FROM keyhold.analytics_verifications",
      "SELECT * FROM `keyhold`.`key_verifications_v1`",
      "SELECT * FROM Key_Verifications_V1",
    ])
      expect(refusal(q).code, q).toBe("invalid_analytics_table");
    expect(refusal("SELECT * FROM information_schema.tables").message).toBe(
      "table information_schema.tables is not allowed: name a table without a database (in FROM)",
    );
    expect(refusal("SELECT * FROM Key_Verifications_V1").message).toContain("table names are case-sensitive; use key_verifications_v1");
  });

  // A CTE name is only a CTE where the server sees it as one; anywhere else it would name a real table.
  it("lets a CTE name be used only where that CTE is in scope", () => {
    expect(refusal("WITH `keys` AS (SELECT * FROM `keys`) SELECT * FROM `keys`")).toEqual({
      code: "invalid_analytics_table",
      message: expect.stringMatching(/^table keys is not allowed; the verifications tables are key_verifications_v1, .* \(in FROM of WITH keys\)$/),
    });
    expect(refusal("WITH b AS (SELECT * FROM a), a AS (SELECT 1 AS x) SELECT * FROM b").code).toBe("invalid_analytics_table");
    expect(refusal("SELECT * FROM (WITH a AS (SELECT 1 AS x) SELECT * FROM a) d, a").code).toBe("invalid_analytics_table");
    expect(body("WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b JOIN a USING (x)")).toBe(
      "WITH `a` AS (SELECT 1 AS `x`), `b` AS (SELECT `x` FROM `a`) SELECT * FROM `b` INNER JOIN `a` USING (`x`) LIMIT 101",
    );
    expect(body("SELECT * FROM (WITH a AS (SELECT key_id FROM key_verifications_v1) SELECT * FROM a) AS d")).toBe(
      "SELECT * FROM (WITH `a` AS (SELECT `key_id` FROM `key_verifications_v1`) SELECT * FROM `a`) AS `d` LIMIT 101",
    );
  });

  it("refuses CTEs named like tables, defined twice, or recursive", () => {
    expect(refusal("WITH key_verifications_v1 AS (SELECT 1) SELECT * FROM key_verifications_v1").message).toBe(
      "a CTE may not be named key_verifications_v1: that name is a table's (in SELECT of WITH key_verifications_v1)",
    );
    expect(refusal("WITH RATELIMITS_V1 AS (SELECT 1) SELECT 1").code).toBe("invalid_analytics_query");
    expect(refusal("WITH analytics_verifications AS (SELECT 1) SELECT 1").code).toBe("invalid_analytics_query");
    expect(refusal("WITH a AS (SELECT 1), a AS (SELECT 2) SELECT 1").message).toContain("CTE a is defined twice");
    expect(refusal("WITH a AS (SELECT 1 AS x) SELECT * FROM (WITH a AS (SELECT 2 AS x) SELECT x FROM a) d").message).toContain("defined twice");
    expect(refusal("WITH RECURSIVE a AS (SELECT 1) SELECT * FROM a").message).toBe("WITH RECURSIVE is not allowed (in SELECT of WITH a)");
  });
});

describe("one SELECT, reading only", () => {
  it("refuses other statements with invalid_analytics_query_type", () => {
    for (const [q, what] of [
      ["DELETE FROM key_verifications_v1", "DELETE"],
      ["UPDATE key_verifications_v1 SET outcome = 'VALID'", "UPDATE"],
      ["INSERT INTO key_verifications_v1 (key_id) VALUES ('x')", "INSERT"],
      ["DROP TABLE key_verifications_v1", "DROP"],
      ["SHOW TABLES", "SHOW"],
      ["SET @a = 1", "SET"],
      ["EXPLAIN SELECT 1", "EXPLAIN"],
    ])
      expect(refusal(q as string), q).toEqual({ code: "invalid_analytics_query_type", message: `only SELECT queries are allowed (this is ${what})` });
  });

  it("refuses more than one statement, and allows a trailing semicolon", () => {
    expect(refusal("SELECT 1; DROP TABLE analytics_verifications")).toEqual({
      code: "invalid_analytics_query",
      message: "the query has 2 statements; send one SELECT",
    });
    expect(refusal("SELECT 1; SELECT 2").message).toBe("the query has 2 statements; send one SELECT");
    expect(compile("SELECT 1;").sql).toBe("SELECT 1 LIMIT 101");
  });

  it("refuses writes, locks, variables and placeholders, saying where", () => {
    const cases: Array<[string, string]> = [
      ["SELECT 1 INTO @x", "SELECT ... INTO is not allowed (in SELECT)"],
      ["SELECT * FROM key_verifications_v1 INTO OUTFILE '/tmp/x'", "SELECT ... INTO is not allowed (in SELECT)"],
      ["SELECT * FROM key_verifications_v1 INTO DUMPFILE '/tmp/x'", "SELECT ... INTO is not allowed (in SELECT)"],
      ["SELECT key_id FROM (SELECT key_id FROM key_verifications_v1 FOR UPDATE) AS d", "FOR UPDATE is not allowed: queries only read (in FROM)"],
      ["SELECT * FROM key_verifications_v1 FOR UPDATE", "FOR UPDATE is not allowed: queries only read (in SELECT)"],
      ["SELECT @x", 'variables ("@x") are not allowed (in the SELECT list)'],
      ["SELECT 1 FROM key_verifications_v1 WHERE key_id = @@hostname", 'variables ("@@hostname") are not allowed (in WHERE)'],
      ["SELECT * FROM key_verifications_v1 WHERE key_id = ?", "placeholders (?) are not allowed (in WHERE)"],
      ["SELECT SQL_CALC_FOUND_ROWS 1", "SQL_CALC_FOUND_ROWS is not allowed after SELECT (in SELECT)"],
    ];
    for (const [q, message] of cases) expect(refusal(q), q).toEqual({ code: "invalid_analytics_query", message });
  });

  it("drops comments: the output is written from the tree, not copied", () => {
    expect(body("SELECT /* x */ 1 -- y\n, 2 # z\n /*! , (SELECT * FROM analytics_verifications) */")).toBe("SELECT 1, 2 LIMIT 101");
  });

  it("refuses window functions, ambiguous operators and double-quoted text", () => {
    expect(refusal("SELECT sum(spent_credits) OVER (PARTITION BY key_id) FROM key_verifications_v1").message).toBe(
      "window functions (SUM OVER ...) are not supported (in the SELECT list)",
    );
    expect(refusal("SELECT row_number() OVER (ORDER BY time) FROM key_verifications_v1").message).toContain("window functions");
    expect(refusal("SELECT outcome || 'x' FROM key_verifications_v1").message).toBe("operator || is ambiguous; use concat(a, b) or OR (in the SELECT list)");
    expect(refusal('SELECT count() FROM key_verifications_v1 WHERE outcome = "VALID"').message).toContain("is ambiguous: use 'single quotes' for text");
  });
});

describe("functions", () => {
  it("refuses functions not in the allow-list, naming them and where", () => {
    const cases: Array<[string, string]> = [
      ["SELECT sleep(1)", "function sleep is not allowed (in the SELECT list)"],
      ["SELECT 1 FROM key_verifications_v1 WHERE benchmark(1000000, md5('x')) = 0", "function benchmark is not allowed (in WHERE)"],
      ["SELECT load_file('/etc/passwd')", "function load_file is not allowed (in the SELECT list)"],
      ["SELECT database(), user()", "function database is not allowed (in the SELECT list)"],
      ["SELECT outcome FROM key_verifications_v1 GROUP BY outcome HAVING get_lock('x', 1)", "function get_lock is not allowed (in HAVING)"],
      ["SELECT 1 FROM key_verifications_v1 ORDER BY rand()", "function rand is not allowed (in ORDER BY)"],
      ["SELECT CONVERT(key_id USING latin1) FROM key_verifications_v1", "function convert is not allowed (in the SELECT list)"],
      ["SELECT mysql.sleep(1)", "function mysql.sleep is not allowed (in the SELECT list)"],
      ["WITH a AS (SELECT version() AS v) SELECT * FROM a", "function version is not allowed (in the SELECT list of WITH a)"],
    ];
    for (const [q, message] of cases) expect(refusal(q), q).toEqual({ code: "invalid_analytics_function", message });
  });

  it("checks arguments", () => {
    expect(refusal("SELECT toStartOfHour(time, 1) FROM key_verifications_v1").message).toBe(
      "function toStartOfHour takes 1 argument (got 2) (in the SELECT list)",
    );
    expect(refusal("SELECT toStartOfInterval(time, INTERVAL 1 WEEK) FROM key_verifications_v1").message).toContain("supports SECOND, MINUTE, HOUR, DAY, MONTH");
    expect(refusal("SELECT dateDiff('fortnight', time, now()) FROM key_verifications_v1").message).toContain("takes a unit as a string");
    expect(refusal("SELECT toDateTime(time, 'Europe/Berlin') FROM key_verifications_v1").message).toContain("accepts only 'UTC'");
    expect(refusal("SELECT time + INTERVAL 1 FORTNIGHT FROM key_verifications_v1").code).toBe("invalid_analytics_query");
  });

  // ClickHouse names in, MariaDB/MySQL out; the integration test runs each on the server.
  it.each([
    ["count()", "COUNT(*)"],
    ["COUNT(*)", "COUNT(*)"],
    ["count(key_id)", "COUNT(`key_id`)"],
    ["count(DISTINCT key_id, outcome)", "COUNT(DISTINCT `key_id`, `outcome`)"],
    ["countIf(outcome = 'VALID')", "COUNT(CASE WHEN (`outcome` = 'VALID') THEN 1 END)"],
    ["sum(spent_credits)", "COALESCE(SUM(`spent_credits`), 0)"],
    ["sumIf(spent_credits, outcome = 'VALID')", "COALESCE(SUM(CASE WHEN (`outcome` = 'VALID') THEN `spent_credits` END), 0)"],
    ["avg(spent_credits)", "AVG(`spent_credits`)"],
    ["min(time)", "MIN(`time`)"],
    ["max(time)", "MAX(`time`)"],
    ["uniq(key_id)", "COUNT(DISTINCT `key_id`)"],
    ["uniqExact(key_id)", "COUNT(DISTINCT `key_id`)"],
    ["uniqIf(key_id, outcome = 'VALID')", "COUNT(DISTINCT CASE WHEN (`outcome` = 'VALID') THEN `key_id` END)"],
    ["has(tags, 'a')", "JSON_CONTAINS(`tags`, JSON_QUOTE(CAST('a' AS CHAR)))"],
    ["length(tags)", "JSON_LENGTH(`tags`)"],
    ["length(key_id)", "LENGTH(`key_id`)"],
    ["if(outcome = 'VALID', 1, 0)", "CASE WHEN (`outcome` = 'VALID') THEN 1 ELSE 0 END"],
    [
      "multiIf(spent_credits > 1, 'a', spent_credits > 0, 'b', 'c')",
      "CASE WHEN (`spent_credits` > 1) THEN 'a' WHEN (`spent_credits` > 0) THEN 'b' ELSE 'c' END",
    ],
    ["ifNull(NULL, 1)", "COALESCE(NULL, 1)"],
    ["round(1.25, 1)", "ROUND(1.25, 1)"],
    ["intDiv(spent_credits, 2)", "(`spent_credits` DIV 2)"],
    ["toString(spent_credits)", "CAST(`spent_credits` AS CHAR)"],
    ["now()", "UTC_TIMESTAMP()"],
    ["today()", "UTC_DATE()"],
    ["toStartOfMinute(time)", "CAST(DATE_FORMAT(`time`, '%Y-%m-%d %H:%i:00') AS DATETIME)"],
    ["toStartOfHour(time)", "CAST(DATE_FORMAT(`time`, '%Y-%m-%d %H:00:00') AS DATETIME)"],
    ["toStartOfDay(time)", "CAST(DATE(`time`) AS DATETIME)"],
    ["toStartOfWeek(time)", "DATE_SUB(DATE(`time`), INTERVAL (DAYOFWEEK(`time`) - 1) DAY)"],
    ["toStartOfWeek(time, 1)", "DATE_SUB(DATE(`time`), INTERVAL WEEKDAY(`time`) DAY)"],
    ["toStartOfMonth(time)", "CAST(DATE_FORMAT(`time`, '%Y-%m-01') AS DATE)"],
    [
      "toStartOfInterval(time, INTERVAL 15 MINUTE)",
      "(CAST('1970-01-01 00:00:00' AS DATETIME) + INTERVAL (TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', `time`) DIV 900 * 900) SECOND)",
    ],
    ["toDate(time)", "DATE(`time`)"],
    ["toDateTime('2026-01-01 00:00:00')", "CAST('2026-01-01 00:00:00' AS DATETIME)"],
    ["toDateTime(1700000000)", "(CAST('1970-01-01 00:00:00' AS DATETIME) + INTERVAL (1700000000) SECOND)"],
    ["toUnixTimestamp(time)", "TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', `time`)"],
    ["dateDiff('hour', time, now())", "TIMESTAMPDIFF(HOUR, `time`, UTC_TIMESTAMP())"],
    ["time > now() - INTERVAL 7 DAY", "(`time` > (UTC_TIMESTAMP() - INTERVAL 7 DAY))"],
    ["DATE_SUB(time, INTERVAL 1 MONTH)", "DATE_SUB(`time`, INTERVAL 1 MONTH)"],
    ["addHours(time, 2)", "(`time` + INTERVAL (2) HOUR)"],
  ])("%s", (fn, sql) => {
    expect(body(`SELECT ${fn} FROM key_verifications_v1`)).toBe(`SELECT ${sql} FROM \`key_verifications_v1\` LIMIT 101`);
  });

  it("takes names in any case", () => {
    expect(body("SELECT COUNTIF(outcome = 'VALID'), tostartofday(time) FROM key_verifications_v1")).toContain("COUNT(CASE WHEN");
  });
});

describe("count() in ClickHouse's spelling", () => {
  it("becomes count(*) in code only, not in strings, names or comments", () => {
    expect(
      rewriteCountCalls("SELECT count(), COUNT ( /* c */ ), count(x), 'count()', `count()`, \"count()\" -- count()\n # count()\n /* count() */").text,
    ).toBe("SELECT count(*), COUNT (* /* c */ ), count(x), 'count()', `count()`, \"count()\" -- count()\n # count()\n /* count() */");
    expect(rewriteCountCalls("SELECT 'it''s count()', 'a\\' count()', countIf()").text).toBe("SELECT 'it''s count()', 'a\\' count()', countIf()");
    expect(body("SELECT count() FROM key_verifications_v1 WHERE outcome = 'count()'")).toBe(
      "SELECT COUNT(*) FROM `key_verifications_v1` WHERE (`outcome` = 'count()') LIMIT 101",
    );
  });
});

describe("literals", () => {
  it("re-quotes strings, however they were escaped", () => {
    expect(body("SELECT 'it''s', 'it\\'s', 'a\\\\b', 'tab\\there', 'pct\\%'")).toBe("SELECT 'it''s', 'it''s', 'a\\\\b', 'tab\there', 'pct\\\\%' LIMIT 101");
    expect(quote("a'b\\c\0")).toBe("'a''b\\\\c\\0'");
  });

  it("keeps numbers, NULL, booleans, dates", () => {
    expect(body("SELECT 1, -2, 1.50, 12345678901234567890, NULL, TRUE, false, DATE '2026-01-02', TIMESTAMP '2026-01-02 03:04:05'")).toBe(
      "SELECT 1, (-2), 1.50, 12345678901234567890, NULL, TRUE, FALSE, DATE '2026-01-02', TIMESTAMP '2026-01-02 03:04:05' LIMIT 101",
    );
  });

  it("refuses literals it does not write back", () => {
    expect(refusal("SELECT X'41'").message).toBe("unsupported expression (hex_string) (in the SELECT list)");
    expect(refusal("SELECT DATE '2026-01-02; DROP'").message).toContain("is not a date");
  });

  it("refuses names that could not be written back plainly", () => {
    expect(refusal("SELECT 1 AS `a``b`").message).toContain("alias");
    expect(refusal("SELECT 1 AS 'two words'").message).toContain('alias "two words" is not allowed');
  });
});

describe("what the parser gets wrong", () => {
  // node-sql-parser 5.4.0 groups AND/OR in order of appearance outside the SELECT list.
  it("binds AND before OR, as MySQL does", () => {
    expect(body("SELECT 1 FROM key_verifications_v1 WHERE key_id = 'a' OR key_id = 'b' AND outcome = 'c' OR outcome = 'd'")).toBe(
      "SELECT 1 FROM `key_verifications_v1` WHERE (((`key_id` = 'a') OR ((`key_id` = 'b') AND (`outcome` = 'c'))) OR (`outcome` = 'd')) LIMIT 101",
    );
    expect(body("SELECT countIf(key_id = 'a' OR (outcome = 'b' OR region = 'c') AND NOT region = 'd') FROM key_verifications_v1")).toBe(
      "SELECT COUNT(CASE WHEN ((`key_id` = 'a') OR (((`outcome` = 'b') OR (`region` = 'c')) AND (NOT (`region` = 'd')))) THEN 1 END) FROM `key_verifications_v1` LIMIT 101",
    );
  });

  // It also reads f(a, b OR c) as OR([a, b], c).
  it("keeps the arguments of a call whose last argument has AND or OR", () => {
    expect(body("SELECT sumIf(spent_credits, outcome = 'a' OR outcome = 'b' AND key_id = 'c') FROM key_verifications_v1")).toBe(
      "SELECT COALESCE(SUM(CASE WHEN ((`outcome` = 'a') OR ((`outcome` = 'b') AND (`key_id` = 'c'))) THEN `spent_credits` END), 0) FROM `key_verifications_v1` LIMIT 101",
    );
    expect(body("SELECT if(key_id = 'a' AND outcome = 'b', 1, 2), NOT (1 = 2) FROM key_verifications_v1")).toBe(
      "SELECT CASE WHEN ((`key_id` = 'a') AND (`outcome` = 'b')) THEN 1 ELSE 2 END, (NOT (1 = 2)) FROM `key_verifications_v1` LIMIT 101",
    );
  });

  // And binds XOR tighter than =.
  it("refuses XOR rather than misread it", () => {
    expect(refusal("SELECT 1 FROM key_verifications_v1 WHERE key_id = 'a' XOR outcome = 'b'").message).toBe(
      "XOR is not supported; write it with AND, OR and NOT (in WHERE)",
    );
  });
});

describe("columns", () => {
  it("allows the public columns and the query's own names", () => {
    expect(body("SELECT toStartOfHour(time) AS hour, count() AS n FROM key_verifications_v1 GROUP BY hour ORDER BY n DESC")).toBe(
      "SELECT CAST(DATE_FORMAT(`time`, '%Y-%m-%d %H:00:00') AS DATETIME) AS `hour`, COUNT(*) AS `n` FROM `key_verifications_v1` GROUP BY `hour` ORDER BY `n` DESC LIMIT 101",
    );
    expect(body("WITH d(k) AS (SELECT key_id FROM key_verifications_v1) SELECT k FROM d")).toBe(
      "WITH `d`(`k`) AS (SELECT `key_id` FROM `key_verifications_v1`) SELECT `k` FROM `d` LIMIT 101",
    );
  });

  it("refuses unknown columns, naming them and where", () => {
    expect(refusal("SELECT count() FROM key_verifications_v1 WHERE namespace_id = 'x'").message).toMatch(
      /^column namespace_id is not allowed; .* \(in WHERE\)$/,
    );
    expect(refusal("SELECT count FROM key_verifications_v1").message).toMatch(/^column count is not allowed/);
    expect(refusal("SELECT v.key_id FROM key_verifications_v1 AS k").message).toBe("v in v.key_id is not a table of the query (in the SELECT list)");
    expect(refusal("SELECT a.b.c FROM key_verifications_v1").message).toContain("is not allowed: name no database");
  });
});

describe("the row cap", () => {
  it("adds a LIMIT of maxRows + 1, or lowers the user's", () => {
    expect(body("SELECT key_id FROM key_verifications_v1")).toBe("SELECT `key_id` FROM `key_verifications_v1` LIMIT 101");
    expect(body("SELECT key_id FROM key_verifications_v1 LIMIT 5")).toMatch(/ LIMIT 5$/);
    expect(body("SELECT key_id FROM key_verifications_v1 LIMIT 100000")).toMatch(/ LIMIT 101$/);
    expect(body("SELECT key_id FROM key_verifications_v1 LIMIT 18446744073709551615")).toMatch(/ LIMIT 101$/);
    expect(body("SELECT key_id FROM key_verifications_v1 LIMIT 10, 500")).toMatch(/ LIMIT 101 OFFSET 10$/);
    expect(body("SELECT key_id FROM key_verifications_v1 LIMIT 500 OFFSET 10")).toMatch(/ LIMIT 101 OFFSET 10$/);
    expect(body("SELECT key_id FROM key_verifications_v1", "verifications", 0)).toMatch(/ LIMIT 1$/);
  });

  // Wrapping the query in a derived table would lose its ORDER BY on MariaDB: the outermost LIMIT is set instead.
  it("caps a UNION as a whole, keeping its ORDER BY", () => {
    expect(body("SELECT key_id FROM key_verifications_v1 UNION ALL SELECT key_id FROM key_verifications_per_day_v1 ORDER BY 1 DESC LIMIT 1000")).toBe(
      "SELECT `key_id` FROM `key_verifications_v1` UNION ALL SELECT `key_id` FROM `key_verifications_per_day_v1` ORDER BY 1 DESC LIMIT 101",
    );
    expect(body("(SELECT key_id FROM key_verifications_v1 LIMIT 500) UNION (SELECT key_id FROM key_verifications_per_day_v1 ORDER BY key_id LIMIT 3)")).toBe(
      "(SELECT `key_id` FROM `key_verifications_v1` LIMIT 500) UNION (SELECT `key_id` FROM `key_verifications_per_day_v1` ORDER BY `key_id` LIMIT 3) LIMIT 101",
    );
    expect(body("(SELECT key_id FROM key_verifications_v1 ORDER BY time LIMIT 300) ORDER BY key_id DESC LIMIT 200")).toBe(
      "(SELECT `key_id` FROM `key_verifications_v1` ORDER BY `time` LIMIT 300) ORDER BY `key_id` DESC LIMIT 101",
    );
  });

  it("leaves the limits of subqueries alone", () => {
    expect(body("SELECT * FROM (SELECT key_id FROM key_verifications_v1 LIMIT 1000) AS d")).toBe(
      "SELECT * FROM (SELECT `key_id` FROM `key_verifications_v1` LIMIT 1000) AS `d` LIMIT 101",
    );
  });

  it("refuses a LIMIT that is not a number", () => {
    expect(refusal("SELECT 1 FROM key_verifications_v1 LIMIT -1").code).toBe("invalid_analytics_query");
  });
});

describe("set operations, joins, subqueries", () => {
  it("compiles every place a subquery may be", () => {
    expect(
      body(
        "SELECT (SELECT count() FROM key_verifications_v1 i WHERE i.key_id = o.key_id) AS n FROM key_verifications_v1 o " +
          "WHERE o.key_id IN (SELECT key_id FROM key_verifications_per_day_v1) AND EXISTS (SELECT 1 FROM key_verifications_v1) AND NOT EXISTS (SELECT 2) " +
          "GROUP BY o.key_id HAVING count() > (SELECT 0)",
      ),
    ).toBe(
      "SELECT (SELECT COUNT(*) FROM `key_verifications_v1` AS `i` WHERE (`i`.`key_id` = `o`.`key_id`)) AS `n` FROM `key_verifications_v1` AS `o` " +
        "WHERE (((`o`.`key_id` IN (SELECT `key_id` FROM `key_verifications_per_day_v1`)) AND (EXISTS (SELECT 1 FROM `key_verifications_v1`))) AND (NOT EXISTS (SELECT 2))) " +
        "GROUP BY `o`.`key_id` HAVING (COUNT(*) > (SELECT 0)) LIMIT 101",
    );
  });

  it("keeps EXCEPT and INTERSECT, and joins", () => {
    expect(body("SELECT key_id FROM key_verifications_v1 EXCEPT SELECT key_id FROM key_verifications_per_day_v1")).toBe(
      "SELECT `key_id` FROM `key_verifications_v1` EXCEPT SELECT `key_id` FROM `key_verifications_per_day_v1` LIMIT 101",
    );
    expect(
      body(
        "SELECT a.key_id FROM key_verifications_v1 a LEFT JOIN key_verifications_per_day_v1 b ON a.key_id = b.key_id CROSS JOIN key_verifications_per_hour_v1 c",
      ),
    ).toBe(
      "SELECT `a`.`key_id` FROM `key_verifications_v1` AS `a` LEFT JOIN `key_verifications_per_day_v1` AS `b` ON (`a`.`key_id` = `b`.`key_id`) CROSS JOIN `key_verifications_per_hour_v1` AS `c` LIMIT 101",
    );
  });

  it("refuses a derived table without an alias and FULL JOIN", () => {
    expect(refusal("SELECT * FROM (SELECT 1)").code).toBe("invalid_analytics_query");
    expect(refusal("SELECT 1 FROM key_verifications_v1 a FULL JOIN key_verifications_v1 b ON 1").message).toContain("FULL JOIN is not supported");
  });
});

describe("bounds and syntax errors", () => {
  it("refuses long queries before parsing", () => {
    expect(refusal(`SELECT 1 ${" ".repeat(MAX_QUERY_LENGTH)}`).message).toBe(
      `the query is ${MAX_QUERY_LENGTH + 9} characters long; at most ${MAX_QUERY_LENGTH} are allowed`,
    );
    expect(refusal("  \n ").message).toBe("the query is empty");
  });

  it("refuses deep nesting before parsing, and deep expressions after", () => {
    expect(refusal(`SELECT ${"(".repeat(MAX_NESTING + 1)}1${")".repeat(MAX_NESTING + 1)}`).message).toBe(
      `the query nests parentheses more than ${MAX_NESTING} deep (at line 1, column ${8 + MAX_NESTING})`,
    );
    // Parentheses in a string do not count.
    expect(compile(`SELECT '${"(".repeat(100)}'`).sql).toContain("(((");
    expect(refusal(`SELECT ${"NOT ".repeat(400)}1`).message).toBe("the query nests more than 300 levels deep (in the SELECT list)");
    // A long chain of ORs is one level: it is read as a list.
    expect(compile(`SELECT 1 FROM key_verifications_v1 WHERE ${Array(500).fill("key_id = 'x'").join(" OR ")}`).tables).toEqual(["key_verifications_v1"]);
  });

  it("refuses a query that would grow too large once compiled", () => {
    // toStartOfWeek names its argument twice: 20 deep would be a million times longer.
    expect(refusal(`SELECT ${"toStartOfWeek(".repeat(20)}time${")".repeat(20)} FROM key_verifications_v1`).message).toBe(
      "the query is too large once compiled (over 200000 characters)",
    );
  });

  it("tells where a syntax error is, in the query as written", () => {
    expect(refusal("SELECT count() FROM key_verifications_v1 WHERE")).toEqual({
      code: "invalid_analytics_query",
      message: "syntax error at line 1, column 47, near the end of the query",
    });
    expect(refusal("SELECT count(), count()\nFROM key_verifications_v1 WHER x").message).toBe('syntax error at line 2, column 32, near "x"');
    expect(refusal("SELECT 'unterminated").message).toMatch(/^syntax error at line 1, column \d+, near /);
  });

  // How long the parser takes on the largest queries allowed: see PARSE COST in query.ts.
  it("compiles (or refuses) the largest queries in bounded time", () => {
    const from = " FROM key_verifications_v1";
    const big = [
      `SELECT 1${from} WHERE ${Array(290).fill("key_id = 'x'").join(" OR ")}`,
      `SELECT 1${from} WHERE key_id IN (${Array(2400).fill("'a'").join(",")})`,
      `SELECT * FROM ${"(SELECT * FROM ".repeat(MAX_NESTING - 1)}key_verifications_v1${") x".repeat(MAX_NESTING - 1)}`,
      `SELECT ${Array(2400).fill("1").join("+")}`,
      `SELECT 1 ${"UNION SELECT 1 ".repeat(600)}`,
    ];
    for (const q of big) {
      expect(q.length).toBeLessThanOrEqual(MAX_QUERY_LENGTH);
      try {
        compile(q);
      } catch (err) {
        expect(err).toBeInstanceOf(AnalyticsQueryError);
      }
    }
  });
});

describe("the caller's mistakes", () => {
  it("are TypeErrors, not 400s", () => {
    expect(() => compileAnalyticsQuery("SELECT 1", "verifications", { workspaceId: "" }, { maxRows: 1 })).toThrow(TypeError);
    expect(() => compileAnalyticsQuery("SELECT 1", "verifications", WS, { maxRows: -1 })).toThrow(TypeError);
    expect(() => compileAnalyticsQuery("SELECT 1", "other" as AnalyticsFamily, WS, { maxRows: 1 })).toThrow(TypeError);
  });
});
