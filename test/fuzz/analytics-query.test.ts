// Property-based tests of the analytics query compiler (src/storage/analytics-sql/query.ts),
// without a database: for random text, token soup, plausible queries and
// plausible queries with attacks spliced in, compiling either succeeds or
// throws AnalyticsQueryError (never anything else: no parser exception, no
// stack trace), and every compiled query, parsed again, reads the physical
// analytics tables only inside our CTEs at its head, each filtered to the
// caller's workspace and grants. The same queries run against the real
// server in test/integration/analytics-query-db.test.ts.
// FUZZ_SEED and FUZZ_RUNS: see guard.ts; `npm run fuzz` runs it long.
import fc from "fast-check";
import pkg from "node-sql-parser/build/mariadb.js";
import { describe, expect, it } from "vitest";
import {
  type AnalyticsFamily,
  AnalyticsQueryError,
  type AnalyticsScope,
  type CompiledQuery,
  compileAnalyticsQuery,
  PUBLIC_TABLES,
} from "../../src/storage/analytics-sql/query.js";
import { anyTextArb, hostileQueryArb, plausibleQueryArb, tokenSoupArb } from "./analytics-sql-arbitrary.js";
import { seedFor, settings } from "./guard.js";

// Compiling takes about a millisecond and touches no database: four times the
// other suites' cases per property costs well under a second.
const RUNS = settings.runs * 4;

const SCOPES: Record<AnalyticsFamily, AnalyticsScope[]> = {
  verifications: [{ workspaceId: "ws_a" }, { workspaceId: "ws_a", keySpaceIds: ["ks_a1"] }, { workspaceId: "ws_'a\\", keySpaceIds: [] }],
  ratelimits: [{ workspaceId: "ws_a" }, { workspaceId: "ws_a", namespaceIds: ["ns_a1", "ns_a2"] }, { workspaceId: "ws_a", namespaceIds: [] }],
};

/** A MySQL string literal, written independently of query.ts. */
const lit = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;

/** The CTE our compiler must put first for public table `name` under `scope`. */
function expectedCte(name: string, scope: AnalyticsScope): string {
  const t = PUBLIC_TABLES.get(name);
  if (t === undefined) throw new Error(`not a public table: ${name}`);
  const ids = t.family === "verifications" ? scope.keySpaceIds : scope.namespaceIds;
  const column = t.family === "verifications" ? "key_space_id" : "namespace_id";
  const grant = (q: string) => (ids === undefined ? "" : ids.length === 0 ? " AND 1 = 0" : ` AND ${q}\`${column}\` IN (${ids.map(lit).join(", ")})`);
  const rows = `\`${name}\` AS (SELECT ${t.columns.map((c) => `\`${c}\``).join(", ")} FROM \`${t.physical}\` FORCE INDEX (PRIMARY) WHERE \`workspace_id\` = ${lit(scope.workspaceId)}${grant("")}`;
  if (t.packed === undefined) return `${rows})`;
  // And its packed events (migrations/0015); the user's bounds on time may follow (see ourCte).
  const unpacked = t.columns.map((c) =>
    c === "time"
      ? "CAST(`p`.`time` + INTERVAL `e`.`ms` * 1000 MICROSECOND AS DATETIME(3)) AS `time`"
      : `\`${["request_id", "spent_credits", "passed"].includes(c) ? "e" : "p"}\`.\`${c}\``,
  );
  const last = t.family === "verifications" ? "`spent_credits` BIGINT" : "`passed` TINYINT(1)";
  return (
    `${rows} UNION ALL SELECT ${unpacked.join(", ")} FROM \`${t.physical}_packed\` AS \`p\` FORCE INDEX (PRIMARY) CROSS JOIN JSON_TABLE(\`p\`.\`events\`, '$[*]' COLUMNS (` +
    `\`request_id\` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]', \`ms\` BIGINT PATH '$[1]', ${last} PATH '$[2]')) AS \`e\`` +
    ` WHERE \`p\`.\`workspace_id\` = ${lit(scope.workspaceId)}${grant("`p`.")})`
  );
}

/**
 * Where our CTE for `name` ends when it starts at `at` (-1 when it does not):
 * the expected text, then for a table with packs either its end or the
 * bounds on the packs taken from the user's WHERE, an AND of comparisons of
 * `p`.`time` or `p`.`last_time` with expressions that read no table (no
 * SELECT, FROM or backticked name of their own), ORed.
 */
function ourCte(sql: string, at: number, name: string, scope: AnalyticsScope): number {
  const whole = expectedCte(name, scope);
  if (sql.startsWith(whole, at)) return at + whole.length;
  const head = whole.slice(0, -1);
  if (PUBLIC_TABLES.get(name)?.packed === undefined || !sql.startsWith(head, at)) return -1;
  let i = at + head.length;
  if (!sql.startsWith(" AND (", i)) return -1;
  // The bound: up to its closing parenthesis, literals and names skipped.
  // (Literals and names blanked to the same length: indexes into `code` are indexes into the text.)
  const code = sql.slice(i + 5).replace(/'(?:[^'\\]|\\.|'')*'|`(?:[^`]|``)*`/g, (m) => "_".repeat(m.length));
  let depth = 0;
  let end = -1;
  for (let j = 0; j < code.length && end < 0; j++) {
    if (code[j] === "(") depth++;
    else if (code[j] === ")" && --depth === 0) end = j;
  }
  if (end < 0 || code[end + 1] !== ")") return -1;
  const bound = sql.slice(i + 5, i + 5 + end + 1);
  expect(codeOf(bound), bound).not.toMatch(/\b(SELECT|FROM|JOIN)\b/i);
  const names = [...bound.replace(/'(?:[^'\\]|\\.|'')*'/g, "''").matchAll(/`\w+`(\.`\w+`)?/g)].map((m) => m[0]);
  for (const n of names) expect(["`p`.`time`", "`p`.`last_time`"], bound).toContain(n);
  i += 5 + end + 2;
  return i;
}

const parser = new pkg.Parser();
const PHYSICAL = new Set([...PUBLIC_TABLES.values()].map((t) => t.physical));

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null;
const nameOf = (v: unknown): string | undefined => (typeof v === "string" ? v : isNode(v) && typeof v.value === "string" ? v.value : undefined);

/** Every table reference and CTE name in a parsed tree. */
function walk(v: unknown, refs: Array<{ db: unknown; table: string }>, ctes: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) walk(x, refs, ctes);
    return;
  }
  if (!isNode(v)) return;
  for (const [k, x] of Object.entries(v)) {
    if (k === "from" && Array.isArray(x))
      for (const item of x) {
        const table = isNode(item) ? nameOf(item.table) : undefined;
        if (table !== undefined && isNode(item)) refs.push({ db: item.db ?? item.schema ?? null, table });
      }
    if (k === "with" && Array.isArray(x))
      for (const item of x) {
        const n = isNode(item) ? nameOf(item.name) : undefined;
        if (n !== undefined) ctes.add(n);
      }
    walk(x, refs, ctes);
  }
}

/**
 * The property every compiled query keeps: it starts with exactly our CTEs,
 * one per table in `tables`, in that order; and after them it names no
 * physical table, no database, and no table that is neither a public table it
 * read nor a CTE it defines. Checked on the tree when node-sql-parser parses
 * the output again, else on the text: the parser refuses some valid SQL, such
 * as `x IN (SELECT (a = 1) FROM t)`.
 */
function checkCompiled(out: CompiledQuery, family: AnalyticsFamily, scope: AnalyticsScope): void {
  for (const t of out.tables) expect(PUBLIC_TABLES.get(t)?.family, t).toBe(family);
  const ours = out.tables;
  let rest = out.sql;
  if (ours.length > 0) {
    expect(out.sql.startsWith("WITH "), out.sql).toBe(true);
    let at = "WITH ".length;
    for (const [k, t] of ours.entries()) {
      if (k > 0) {
        expect(out.sql.startsWith(", ", at), out.sql).toBe(true);
        at += 2;
      }
      at = ourCte(out.sql, at, t, scope);
      expect(at, out.sql).toBeGreaterThan(0);
    }
    rest = out.sql.slice(at);
    // Then the user's CTEs (", ...") or the query itself (" SELECT" / " (SELECT").
    expect(rest, out.sql).toMatch(/^(, `|\s\(*SELECT )/);
  }
  // Outside literals and quoted names: no comments, variables, placeholders, double quotes or second statements.
  expect(codeOf(out.sql), out.sql).not.toMatch(/\/\*|--|#|@|\?|;|"/);
  let ast: unknown;
  try {
    ast = parser.astify(out.sql, { database: "mariadb" });
  } catch {
    checkText(rest, out);
    return;
  }
  expect(Array.isArray(ast) ? ast.length : 1, out.sql).toBe(1);
  const statement = (Array.isArray(ast) ? ast[0] : ast) as unknown as Node;
  expect(statement.type).toBe("select");
  const withItems = Array.isArray(statement.with) ? statement.with : [];
  // Our CTEs are the first items; their bodies read the physical tables and were checked as text above.
  const theirs = withItems.slice(ours.length);
  const refs: Array<{ db: unknown; table: string }> = [];
  const ctes = new Set<string>(withItems.map((w) => nameOf((w as Node).name) ?? ""));
  walk({ ...statement, with: theirs }, refs, ctes);
  for (const { db, table } of refs) {
    expect(db, `${table} in ${out.sql}`).toBeNull();
    expect(PHYSICAL.has(table.toLowerCase()) || table.toLowerCase().startsWith("analytics_"), `${table} in ${out.sql}`).toBe(false);
    expect(out.tables.includes(table) || ctes.has(table), `${table} in ${out.sql}`).toBe(true);
  }
}

/**
 * The same on the text after our CTEs (every name the compiler writes is in
 * backticks, every keyword bare): no analytics_* name at all, and each name
 * after FROM or JOIN is a public table read or a CTE the text defines, not
 * followed by a dot.
 */
function checkText(rest: string, out: CompiledQuery): void {
  const code = rest.replace(/'(?:[^'\\]|\\.|'')*'/g, "''");
  expect(code.toLowerCase(), out.sql).not.toContain("analytics_");
  const ctes = new Set([...code.matchAll(/`(\w+)`(?:\([^()]*\))? AS \(/g)].map((m) => m[1]));
  for (const [, table, after] of code.matchAll(/\b(?:FROM|JOIN) `(\w+)`(\s*\.)?/g)) {
    expect(after, out.sql).toBeUndefined();
    expect(out.tables.includes(table as string) || ctes.has(table as string), `${table} in ${out.sql}`).toBe(true);
  }
  // A FROM or JOIN is followed by a name or a subquery, nothing else.
  expect(code, out.sql).not.toMatch(/\b(?:FROM|JOIN) (?!`\w+`|\(|DUAL\b)/);
}

/** The text with its string literals and backticked names blanked out (MySQL's lexical rules). */
function codeOf(sql: string): string {
  return sql.replace(/'(?:[^'\\]|\\.|'')*'|`(?:[^`]|``)*`/g, "_");
}

/** Compiles, and returns the result or the AnalyticsQueryError; anything else thrown fails the property. */
function attempt(q: string, family: AnalyticsFamily, scope: AnalyticsScope): CompiledQuery | AnalyticsQueryError {
  try {
    return compileAnalyticsQuery(q, family, scope, { maxRows: 1000 });
  } catch (err) {
    if (err instanceof AnalyticsQueryError) {
      expect(err.message.length).toBeGreaterThan(0);
      expect(err.message).not.toMatch(/\n\s+at /);
      return err;
    }
    throw new Error(`${q}\nthrew ${String(err)}`);
  }
}

// The check must be able to fail: compiled-looking queries that break the property, one way each.
describe("the property's check", () => {
  const scope: AnalyticsScope = { workspaceId: "ws_a" };
  const ours = expectedCte("key_verifications_v1", scope);
  it.each([
    ["a physical table after our CTEs", `WITH ${ours} SELECT * FROM analytics_verifications`, ["key_verifications_v1"]],
    [
      "a CTE without the workspace filter",
      "WITH `key_verifications_v1` AS (SELECT * FROM `analytics_verifications`) SELECT * FROM `key_verifications_v1`",
      ["key_verifications_v1"],
    ],
    [
      "another scope's filter",
      `WITH ${expectedCte("key_verifications_v1", { workspaceId: "ws_b" })} SELECT * FROM \`key_verifications_v1\``,
      ["key_verifications_v1"],
    ],
    ["a table no CTE defines", "SELECT * FROM `keys`", []],
    ["a database-qualified table", `WITH ${ours} SELECT * FROM keyhold.key_verifications_v1`, ["key_verifications_v1"]],
    ["a variable", "SELECT @x", []],
    ["a comment", "SELECT 1 /* x */", []],
    [
      "a bound on the packs that reads a table",
      `WITH ${ours.slice(0, -1)} AND ((\`p\`.\`time\` < (SELECT 1 FROM \`keys\`)))) SELECT 1`,
      ["key_verifications_v1"],
    ],
    ["a bound on the packs that names a column", `WITH ${ours.slice(0, -1)} AND ((\`p\`.\`key_id\` = 'k'))) SELECT 1`, ["key_verifications_v1"]],
  ])("fails for %s", (_, sql, tables) => {
    expect(() => checkCompiled({ sql, tables }, "verifications", scope)).toThrow();
  });
  it("passes a compiled query with bounds on the packs", () => {
    const out = compileAnalyticsQuery("SELECT request_id FROM key_verifications_v1 WHERE time > now() - INTERVAL 1 DAY", "verifications", scope, {
      maxRows: 10,
    });
    expect(out.sql).toContain("(`p`.`last_time` > ");
    checkCompiled(out, "verifications", scope);
  });
  // The same through the text check: each of these the parser cannot read (its IN (SELECT (...)) bug).
  it.each([
    ["a physical table", "SELECT 1 WHERE 1 IN (SELECT (1 = 1) FROM `analytics_verifications`)", []],
    ["a table no CTE defines", "SELECT 1 WHERE 1 IN (SELECT (1 = 1) FROM `keys`)", []],
    ["a database-qualified table", `WITH ${ours} SELECT 1 WHERE 1 IN (SELECT (1 = 1) FROM \`key_verifications_v1\`.\`x\`)`, ["key_verifications_v1"]],
    ["an unquoted table", "SELECT 1 WHERE 1 IN (SELECT (1 = 1) FROM keys)", []],
  ])("fails for %s in text the parser refuses", (_, sql, tables) => {
    expect(() => parser.astify(sql, { database: "mariadb" })).toThrow();
    expect(() => checkCompiled({ sql, tables }, "verifications", scope)).toThrow();
  });
});

describe.each(["verifications", "ratelimits"] as const)("compiling %s queries", (family) => {
  const scopeArb = fc.constantFrom(...SCOPES[family]);
  const property = (name: string, arb: fc.Arbitrary<string>) =>
    it(name, () => {
      fc.assert(
        fc.property(arb, scopeArb, (q, scope) => {
          const out = attempt(q, family, scope);
          if (!(out instanceof AnalyticsQueryError)) checkCompiled(out, family, scope);
        }),
        { seed: seedFor(`analytics.${family}.${name}`), numRuns: RUNS, ...(settings.path === undefined ? {} : { path: settings.path }) },
      );
    });

  property("any text", anyTextArb);
  property("token soup", tokenSoupArb(family));
  property("plausible queries", plausibleQueryArb(family));
  property("plausible queries with attacks spliced in", hostileQueryArb(family));

  it("compiles most plausible queries (the properties above are not vacuous)", () => {
    const sample = fc.sample(plausibleQueryArb(family), { seed: seedFor(`analytics.${family}.sample`), numRuns: 200 });
    const compiled = sample.filter((q) => !(attempt(q, family, { workspaceId: "ws_a" }) instanceof AnalyticsQueryError));
    expect(compiled.length / sample.length).toBeGreaterThan(0.9);
  });
});
