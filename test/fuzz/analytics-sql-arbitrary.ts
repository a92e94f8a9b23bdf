// Analytics queries for the fuzz suites (analytics-query.test.ts, and the
// database run in test/integration/analytics-query-db.test.ts): plausible
// queries over one family's public tables (most compile and run), the same
// with hostile pieces spliced in (other tables, other workspaces, comments,
// quotes and backslashes, stacked statements, forbidden functions), and loose
// token soup. Constants stay small, so that a leaked row's huge seeded numbers
// could not be mistaken for arithmetic on the caller's own.
import fc from "fast-check";
import { type AnalyticsFamily, PUBLIC_TABLES } from "../../src/storage/analytics-sql/query.js";

interface Table {
  name: string;
  columns: readonly string[];
  numeric: readonly string[];
  text: readonly string[];
}

const NUMERIC = new Set(["spent_credits", "count", "passed", "total"]);

export const familyTables = (family: AnalyticsFamily): Table[] =>
  [...PUBLIC_TABLES.values()]
    .filter((t) => t.family === family)
    .map((t) => ({
      name: t.name,
      columns: t.columns,
      numeric: t.columns.filter((c) => NUMERIC.has(c)),
      text: t.columns.filter((c) => !NUMERIC.has(c) && c !== "time" && c !== "tags"),
    }));

/** Text a literal may hold: quotes, backslashes, comment and statement markers, LIKE wildcards, non-ASCII. */
export const AWKWARD_TEXT = [
  "VALID",
  "RATE_LIMITED",
  "a",
  "it's",
  "a''b",
  "back\\slash",
  "\\",
  "\\'",
  "'",
  "%",
  "_",
  "' OR '1'='1",
  "\\' OR 1=1 -- ",
  "*/ OR 1=1 /*",
  "-- ",
  "# x",
  ";",
  "'; DROP TABLE analytics_verifications; --",
  "count()",
  "`",
  '"',
  "\0",
  "\n",
  "é",
  "😀",
  "analytics_verifications",
  "ws_other",
  '["a"]',
];

/** A string literal written the way MySQL reads it (or, for `raw`, pasted in as is). */
const literal = (s: string, raw = false): string => (raw ? `'${s}'` : `'${s.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`);

const smallInt = fc.integer({ min: 0, max: 100 }).map(String);
const textLit = fc.constantFrom(...AWKWARD_TEXT).map((s) => literal(s));

/** Expressions over `t`'s columns, `depth` levels of operators and calls at most. */
function exprArb(t: Table, depth: number, family: AnalyticsFamily): fc.Arbitrary<string> {
  const col = fc.constantFrom(...t.columns);
  const num = fc.constantFrom(...(t.numeric.length > 0 ? t.numeric : ["1"]));
  const leaf = fc.oneof(col, col, smallInt, textLit, fc.constant("NULL"), fc.constant("TRUE"));
  if (depth <= 0) return leaf;
  const sub = exprArb(t, depth - 1, family);
  const cond = condArb(t, depth - 1, family);
  const calls: fc.Arbitrary<string>[] = [
    fc.tuple(sub, fc.constantFrom("+", "-", "*", "/", "%", "DIV"), sub).map(([a, op, b]) => `(${a} ${op} ${b})`),
    fc.tuple(cond, sub, sub).map(([c, a, b]) => `if(${c}, ${a}, ${b})`),
    fc.tuple(cond, sub, sub).map(([c, a, b]) => `CASE WHEN ${c} THEN ${a} ELSE ${b} END`),
    fc.tuple(sub, sub).map(([a, b]) => `coalesce(${a}, ${b})`),
    fc.tuple(sub, sub).map(([a, b]) => `ifNull(${a}, ${b})`),
    fc.tuple(sub, sub).map(([a, b]) => `concat(${a}, ${b})`),
    fc.tuple(fc.constantFrom("lower", "upper", "length", "abs", "round", "floor", "ceil", "toString"), sub).map(([f, a]) => `${f}(${a})`),
    fc
      .constantFrom(
        "toStartOfMinute",
        "toStartOfFiveMinutes",
        "toStartOfHour",
        "toStartOfDay",
        "toStartOfWeek",
        "toMonday",
        "toStartOfMonth",
        "toStartOfYear",
        "toDate",
        "toUnixTimestamp",
        "toYear",
        "toHour",
        "toDayOfWeek",
      )
      .map((f) => `${f}(time)`),
    fc.constantFrom("MINUTE", "HOUR", "DAY", "MONTH").map((u) => `toStartOfInterval(time, INTERVAL 1 ${u})`),
    fc.constantFrom("'hour'", "'day'").map((u) => `dateDiff(${u}, time, now())`),
    fc.constantFrom("now()", "today()", "yesterday()", "toDateTime('2026-01-01 00:00:00')", "toDateTime(1767225600)"),
    fc.tuple(smallInt, fc.constantFrom("MINUTE", "HOUR", "DAY", "MONTH")).map(([n, u]) => `(time - INTERVAL ${n} ${u})`),
    // A scalar subquery over another table of the family.
    fc
      .tuple(fc.constantFrom(...familyTables(family)), smallInt)
      .map(([o, n]) => `(SELECT count() FROM ${o.name} WHERE ${o.text[0] ?? "time"} IS NOT NULL LIMIT ${n})`),
    num,
  ];
  if (t.columns.includes("tags"))
    calls.push(
      textLit.map((s) => `has(tags, ${s})`),
      fc.constant("length(tags)"),
    );
  return fc.oneof({ weight: 3, arbitrary: leaf }, { weight: 2, arbitrary: fc.oneof(...calls) });
}

/** A condition: comparisons, IN, BETWEEN, LIKE, IS NULL, AND/OR/NOT, EXISTS and IN (SELECT ...). */
function condArb(t: Table, depth: number, family: AnalyticsFamily): fc.Arbitrary<string> {
  const e = exprArb(t, Math.min(depth, 1), family);
  const col = fc.constantFrom(...t.columns);
  const base = fc.oneof(
    fc.tuple(e, fc.constantFrom("=", "!=", "<>", "<", "<=", ">", ">="), e).map(([a, op, b]) => `${a} ${op} ${b}`),
    fc.tuple(col, fc.array(fc.oneof(textLit, smallInt), { minLength: 1, maxLength: 4 })).map(([c, xs]) => `${c} IN (${xs.join(", ")})`),
    fc.tuple(col, smallInt, smallInt).map(([c, a, b]) => `${c} NOT BETWEEN ${a} AND ${b}`),
    fc.tuple(col, textLit).map(([c, s]) => `${c} LIKE ${s}`),
    col.map((c) => `${c} IS NOT NULL`),
    fc.constantFrom("1 = 1", "workspace_id = 'ws_other' OR 1 = 1", "TRUE", "time > now() - INTERVAL 3650 DAY"),
  );
  if (depth <= 0) return base;
  const sub = condArb(t, depth - 1, family);
  const other = fc.constantFrom(...familyTables(family));
  return fc.oneof(
    { weight: 3, arbitrary: base },
    { weight: 1, arbitrary: fc.tuple(sub, fc.constantFrom("AND", "OR"), sub).map(([a, op, b]) => `(${a} ${op} ${b})`) },
    { weight: 1, arbitrary: sub.map((a) => `NOT (${a})`) },
    { weight: 1, arbitrary: other.map((o) => `EXISTS (SELECT 1 FROM ${o.name})`) },
    {
      weight: 1,
      arbitrary: other
        .filter((o) => o.columns.includes(t.text[0] ?? "time"))
        .map((o) => `${t.text[0] ?? "time"} IN (SELECT ${t.text[0] ?? "time"} FROM ${o.name})`),
    },
  );
}

/** Aggregates of t's columns, as SDK users write them. */
function aggregateArb(t: Table, family: AnalyticsFamily): fc.Arbitrary<string> {
  const col = fc.constantFrom(...t.columns);
  const num = fc.constantFrom(...(t.numeric.length > 0 ? t.numeric : ["1"]));
  const cond = condArb(t, 0, family);
  return fc.oneof(
    fc.constantFrom("count()", "count(*)"),
    col.map((c) => `count(DISTINCT ${c})`),
    col.map((c) => `uniq(${c})`),
    cond.map((c) => `countIf(${c})`),
    num.map((c) => `sum(${c})`),
    fc.tuple(num, cond).map(([c, w]) => `sumIf(${c}, ${w})`),
    num.map((c) => `avg(${c})`),
    col.map((c) => `min(${c})`),
    col.map((c) => `max(${c})`),
  );
}

const limitArb = fc.option(
  fc.integer({ min: 0, max: 2000 }).map((n) => ` LIMIT ${n}`),
  { nil: "" },
);

/** One plausible SELECT over one of the family's tables. */
function selectArb(family: AnalyticsFamily, depth: number): fc.Arbitrary<string> {
  return fc.constantFrom(...familyTables(family)).chain((t) => {
    const where = fc.option(
      condArb(t, 2, family).map((c) => ` WHERE ${c}`),
      { nil: "" },
    );
    const exprs = fc.array(exprArb(t, 2, family), { minLength: 1, maxLength: 4 }).map((es) => es.map((e, i) => `${e} AS c${i}`).join(", "));
    const plain = fc
      .tuple(fc.boolean(), exprs, where, limitArb)
      .map(([d, es, w, l]) => `SELECT ${d ? "DISTINCT " : ""}${es} FROM ${t.name}${w} ORDER BY 1${l}`);
    const star = fc.tuple(where, limitArb).map(([w, l]) => `SELECT * FROM ${t.name}${w}${l}`);
    const grouped = fc
      .tuple(fc.constantFrom(...t.columns), fc.array(aggregateArb(t, family), { minLength: 1, maxLength: 3 }), where, fc.boolean(), limitArb)
      .map(
        ([g, aggs, w, having, l]) =>
          `SELECT ${g} AS g, ${aggs.map((a, i) => `${a} AS a${i}`).join(", ")} FROM ${t.name}${w} GROUP BY g${having ? " HAVING a0 >= 0" : ""} ORDER BY a0 DESC, g${l}`,
      );
    const shapes: fc.Arbitrary<string>[] = [plain, star, grouped];
    if (depth > 0) {
      const inner = selectArb(family, depth - 1);
      shapes.push(
        inner.map((q) => `SELECT * FROM (${q}) AS d`),
        inner.map((q) => `WITH mine AS (${q}) SELECT * FROM mine`),
        fc.tuple(fc.constantFrom(...familyTables(family)), fc.constantFrom(...familyTables(family))).map(([a, b]) => {
          const c = a.text.find((x) => b.text.includes(x)) ?? "time";
          return `SELECT x.${c} FROM ${a.name} AS x LEFT JOIN ${b.name} AS y ON x.${c} = y.${c} ORDER BY 1`;
        }),
        fc
          .tuple(
            fc.constantFrom(...familyTables(family)),
            fc.constantFrom(...familyTables(family)),
            fc.constantFrom("UNION", "UNION ALL", "EXCEPT", "INTERSECT"),
          )
          .map(([a, b, op]) => {
            const c = a.text.find((x) => b.text.includes(x)) ?? "time";
            return `SELECT ${c} FROM ${a.name} ${op} SELECT ${c} FROM ${b.name} ORDER BY 1`;
          }),
      );
    }
    return fc.oneof(...shapes);
  });
}

/** Queries SDK users might plausibly send: most compile, and most of those run. */
export const plausibleQueryArb = (family: AnalyticsFamily): fc.Arbitrary<string> => selectArb(family, 2);

/** Pieces an attacker splices in. */
export function attackPieces(family: AnalyticsFamily): string[] {
  const physical = [...PUBLIC_TABLES.values()].map((t) => t.physical);
  const other = [...PUBLIC_TABLES.values()].filter((t) => t.family !== family).map((t) => t.name);
  return [
    ...physical.map((p) => ` UNION ALL SELECT * FROM ${p}`),
    ...physical.map((p) => ` WHERE 1 IN (SELECT 1 FROM ${p})`),
    ...other.map((p) => ` UNION SELECT * FROM ${p}`),
    " OR workspace_id = 'ws_other'",
    " OR 1=1",
    " WHERE workspace_id = 'ws_other' OR 1=1",
    "; SELECT * FROM analytics_verifications",
    "; DROP TABLE analytics_verifications",
    " /*! UNION SELECT * FROM analytics_verifications */",
    " /* ' */",
    " -- ' OR 1=1\n",
    " # '\n",
    "--",
    "'",
    "\\",
    "\\'",
    '"',
    "`",
    ")",
    "(",
    " UNION SELECT * FROM `keys`",
    " UNION SELECT * FROM information_schema.tables",
    " UNION SELECT user, password FROM mysql.user",
    " UNION SELECT * FROM keyhold.analytics_verifications",
    " UNION SELECT sleep(5)",
    " UNION SELECT benchmark(1000000000, md5('a'))",
    " UNION SELECT load_file('/etc/passwd')",
    " UNION SELECT @@version",
    " UNION SELECT @x := 1",
    " INTO OUTFILE '/tmp/x'",
    " FOR UPDATE",
    " LOCK IN SHARE MODE",
    " PROCEDURE ANALYSE()",
    " WITH RECURSIVE r AS (SELECT 1 UNION ALL SELECT 1 FROM r) SELECT * FROM r",
    " UNION SELECT * FROM (WITH analytics_verifications AS (SELECT 1) SELECT * FROM analytics_verifications) AS z",
    " UNION WITH `keys` AS (SELECT * FROM `keys`) SELECT * FROM `keys`",
    " AND key_id = 'x\\' OR 1=1 -- '",
    " AND key_id = _latin1'x'",
    " AND key_id = X'27'",
    " ORDER BY (SELECT count() FROM analytics_verifications)",
    " LIMIT 1 OFFSET 0",
    " COLLATE utf8mb4_bin",
    " HAVING 1",
  ];
}

/** A plausible query with one to three attack pieces spliced in at random places. */
export function hostileQueryArb(family: AnalyticsFamily): fc.Arbitrary<string> {
  const pieces = fc.constantFrom(...attackPieces(family));
  return fc.tuple(plausibleQueryArb(family), fc.array(fc.tuple(pieces, fc.nat()), { minLength: 1, maxLength: 3 }), fc.boolean()).map(([q, splices, atEnd]) => {
    let out = q;
    for (const [piece, at] of splices) {
      if (atEnd) out += piece;
      else {
        // At a token boundary, so that pieces land inside clauses, subqueries and literals too.
        const spaces = [...out.matchAll(/ /g)].map((m) => m.index);
        const i = spaces.length === 0 ? out.length : (spaces[at % spaces.length] as number);
        out = out.slice(0, i) + piece + out.slice(i);
      }
    }
    return out;
  });
}

/** Tokens of SQL, strung together at random: mostly syntax errors, some odd but valid queries. */
export function tokenSoupArb(family: AnalyticsFamily): fc.Arbitrary<string> {
  const tables = [...PUBLIC_TABLES.values()];
  const token = fc.oneof(
    fc.constantFrom(
      "SELECT",
      "FROM",
      "WHERE",
      "GROUP BY",
      "ORDER BY",
      "HAVING",
      "LIMIT",
      "UNION",
      "ALL",
      "WITH",
      "AS",
      "JOIN",
      "ON",
      "AND",
      "OR",
      "NOT",
      "IN",
      "EXISTS",
      "CASE",
      "WHEN",
      "THEN",
      "END",
      "*",
      ",",
      "(",
      ")",
      "=",
      "+",
      "-",
      ".",
      ";",
      "count()",
      "count(*)",
      "sum(",
      "now()",
      "INTERVAL 1 DAY",
      "@x",
      "@@version",
      "?",
      "/*",
      "*/",
      "--",
      "#",
      "\n",
      "'",
      '"',
      "`",
      "\\",
      "1",
      "-1",
      "1e3",
      "0x41",
      "NULL",
    ),
    fc.constantFrom(...tables.map((t) => t.name), ...tables.map((t) => t.physical), "keys", "information_schema.tables", "mysql.user", "dual"),
    fc.constantFrom(...familyTables(family).flatMap((t) => t.columns), "pk", "tags_hash", "namespace_id", "x"),
    fc.constantFrom(...AWKWARD_TEXT).map((s) => literal(s, true)),
    textLit,
    fc.string({ maxLength: 6 }),
  );
  return fc.array(token, { maxLength: 30 }).map((ts) => ts.join(" "));
}

/** Any text at all, now and then very long or deeply parenthesized. */
export const anyTextArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 60 }).map((n) => `SELECT ${"(".repeat(n)}1${")".repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 9_990, max: 10_010 }).map((n) => `SELECT 1${" ".repeat(Math.max(0, n - 8))}`) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 500 }).map((n) => `SELECT ${"NOT ".repeat(n)}1`) },
);
