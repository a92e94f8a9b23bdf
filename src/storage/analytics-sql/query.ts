// analytics.getVerifications / getRatelimits take SQL written for ClickHouse-style
// public tables (key_verifications_v1, ratelimits_per_hour_v1, ...). This compiles
// it into ONE MariaDB/MySQL SELECT that can only read the caller's workspace, and
// only the APIs or namespaces its grants name. It runs no SQL itself: the
// executor (storage/analytics.ts) runs the result read-only, with a time limit,
// on a pool without multipleStatements.
//
// How the workspace is enforced: the compiled query starts with one CTE per
// public table it reads, named like the public table, that selects the public
// columns from the physical `analytics_*` table filtered by workspace (and key
// spaces or namespaces):
//
//   WITH `key_verifications_v1` AS (SELECT ... FROM `analytics_verifications`
//          WHERE `workspace_id` = 'ws_1' AND `key_space_id` IN ('ks_1')),
//        <the user's own CTEs>
//   <the user's query, re-written from its syntax tree>
//
// Everything after our CTEs is written back from the parsed tree by this file,
// never copied from the input, and only for node types and fields it knows
// (an unknown one is refused, not skipped): so the only tables the rest can
// name are our CTEs and the user's own CTEs in scope, the only functions are
// those of sql-functions.ts, and every literal is re-quoted here. A comment,
// a second statement or an odd quoting trick in the input cannot survive into
// the output, because the output is not made of the input's text.

import pkg from "node-sql-parser/build/mariadb.js";
import { type Arg, INTERVAL_UNITS, SQL_FUNCTIONS } from "./sql-functions.js";

export type AnalyticsFamily = "verifications" | "ratelimits";

export interface AnalyticsScope {
  workspaceId: string;
  /** verifications: the key_space_ids the caller may read; undefined = every API of the workspace */
  keySpaceIds?: readonly string[];
  /** ratelimits: namespace ids; undefined = all */
  namespaceIds?: readonly string[];
}

export interface CompiledQuery {
  sql: string;
  /** the public tables it reads */
  tables: string[];
}

export type AnalyticsQueryErrorCode = "invalid_analytics_query" | "invalid_analytics_query_type" | "invalid_analytics_table" | "invalid_analytics_function";

/** A query refused for what it is: the message names what and where, for the user (never a stack trace). */
export class AnalyticsQueryError extends Error {
  constructor(
    readonly code: AnalyticsQueryErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "AnalyticsQueryError";
  }
}

/** Longer queries are refused before parsing: see PARSE COST below. */
export const MAX_QUERY_LENGTH = 10_000;
/**
 * PARSE COST: the parser is a recursive-descent PEG; about 1,000 nested
 * parentheses overflow its stack (after ~50 ms), so nesting is counted before
 * it runs. Measured here (Node 20.20, node-sql-parser 5.4.0, one core of a
 * small VM), compile time of 10,000-character queries: 2,400 IN items 36-63
 * ms, 1,200 string literals 26-29 ms, 290 ORs 10-31 ms, 600 UNION branches 88
 * ms, 300 CTEs 106 ms; the first query of a process up to ~140 ms (warm-up);
 * 32 nested subqueries or parentheses under 5 ms. query.test.ts compiles such
 * cases (with no assertion on time).
 */
export const MAX_NESTING = 32;
/** Expression depth (300 chained additions or NOTs are 300 deep; ANDs and ORs are read as a list): bounds this file's recursion. */
const MAX_DEPTH = 300;
/** Some translations repeat their argument (toStartOfWeek(t) names t twice); nesting them could double the text each time. */
const MAX_COMPILED_LENGTH = 200_000;
/**
 * And the text built along the way, summed over every expression (a parent's
 * text includes its children's): bounds the work of a query of many such
 * columns. A 10,000-character query 300 deep stays under a million.
 */
const MAX_WORK = 4_000_000;

interface PublicTable {
  name: string;
  physical: string;
  family: AnalyticsFamily;
  columns: readonly string[];
  /**
   * A second physical table of the same events, packed (migrations/0015, 0016):
   * read beside `physical`; `last` is the column an event's array holds third
   * (after its request id and ms), with its type.
   */
  packed?: { table: string; last: string; type: string };
}

// api_id is keyhold's own (one key space per API): the id users know.
const RAW_VERIFICATION_COLUMNS = [
  "request_id",
  "time",
  "workspace_id",
  "key_space_id",
  "api_id",
  "key_id",
  "identity_id",
  "external_id",
  "outcome",
  "region",
  "tags",
  "spent_credits",
] as const;
const VERIFICATION_ROLLUP_COLUMNS = [
  "time",
  "workspace_id",
  "key_space_id",
  "key_id",
  "identity_id",
  "external_id",
  "outcome",
  "tags",
  "count",
  "spent_credits",
] as const;
const RAW_RATELIMIT_COLUMNS = ["request_id", "time", "workspace_id", "namespace_id", "identifier", "passed"] as const;
const RATELIMIT_ROLLUP_COLUMNS = ["time", "workspace_id", "namespace_id", "identifier", "passed", "total"] as const;
const ROLLUPS = ["minute", "hour", "day", "month"] as const;

/** The public tables, by the name users write. The physical tables' own columns (pk, tags_hash) are not listed, so never selected. */
export const PUBLIC_TABLES: ReadonlyMap<string, PublicTable> = new Map(
  [
    {
      name: "key_verifications_v1",
      physical: "analytics_verifications",
      packed: { table: "analytics_verifications_packed", last: "spent_credits", type: "BIGINT" },
      family: "verifications" as const,
      columns: RAW_VERIFICATION_COLUMNS,
    },
    ...ROLLUPS.map((r) => ({
      name: `key_verifications_per_${r}_v1`,
      physical: `analytics_verifications_per_${r}`,
      family: "verifications" as const,
      columns: VERIFICATION_ROLLUP_COLUMNS,
    })),
    {
      name: "ratelimits_v1",
      physical: "analytics_ratelimits",
      packed: { table: "analytics_ratelimits_packed", last: "passed", type: "TINYINT(1)" },
      family: "ratelimits" as const,
      columns: RAW_RATELIMIT_COLUMNS,
    },
    ...ROLLUPS.map((r) => ({
      name: `ratelimits_per_${r}_v1`,
      physical: `analytics_ratelimits_per_${r}`,
      family: "ratelimits" as const,
      columns: RATELIMIT_ROLLUP_COLUMNS,
    })),
  ].map((t) => [t.name, t]),
);

const tablesOf = (family: AnalyticsFamily): string[] => [...PUBLIC_TABLES.values()].filter((t) => t.family === family).map((t) => t.name);

/**
 * Compiles a user's analytics query for one family of tables and one scope.
 * Throws AnalyticsQueryError (a 400) for anything it will not run; a TypeError
 * for a caller's mistake in scope or opts.
 */
export function compileAnalyticsQuery(query: string, family: AnalyticsFamily, scope: AnalyticsScope, opts: { maxRows: number }): CompiledQuery {
  checkCaller(family, scope, opts);
  if (typeof query !== "string") throw new AnalyticsQueryError("invalid_analytics_query", "the query must be a string");
  if (query.length > MAX_QUERY_LENGTH)
    throw new AnalyticsQueryError("invalid_analytics_query", `the query is ${query.length} characters long; at most ${MAX_QUERY_LENGTH} are allowed`);
  if (query.trim() === "") throw new AnalyticsQueryError("invalid_analytics_query", "the query is empty");
  const statement = parse(query);
  const compiler = new Compiler(family);
  const userCtes: string[] = [];
  // The row cap: the executor answers 422 when it sees maxRows + 1 rows, so one more than maxRows is all it ever needs.
  const body = compiler.query(statement, { scope: new Set(), clause: "SELECT", depth: 0 }, { cap: opts.maxRows + 1, ctes: userCtes });
  compiler.checkColumns();
  const tables = [...compiler.tables].sort();
  // Ours first: a non-recursive WITH item sees only the items before it, so the user's CTEs read ours, and ours read the physical tables.
  const ctes = [...tables.map((t) => scopedTable(PUBLIC_TABLES.get(t) as PublicTable, scope, compiler.packBound(t))), ...userCtes];
  // (Our CTEs are not counted in MAX_COMPILED_LENGTH: a grant on many APIs is not the user's doing.)
  return { sql: ctes.length === 0 ? body : `WITH ${ctes.join(", ")} ${body}`, tables };
}

function checkCaller(family: AnalyticsFamily, scope: AnalyticsScope, opts: { maxRows: number }): void {
  if (family !== "verifications" && family !== "ratelimits") throw new TypeError(`unknown analytics family ${String(family)}`);
  if (typeof scope?.workspaceId !== "string" || scope.workspaceId === "") throw new TypeError("scope.workspaceId must be a non-empty string");
  for (const ids of [scope.keySpaceIds, scope.namespaceIds])
    if (ids !== undefined && (!Array.isArray(ids) || ids.some((id) => typeof id !== "string"))) throw new TypeError("scope ids must be strings");
  if (!Number.isSafeInteger(opts?.maxRows) || opts.maxRows < 0) throw new TypeError("opts.maxRows must be a whole number >= 0");
}

/** Our CTE for one public table: its public columns, the caller's rows only (and its packs', `packBound` limiting which). */
function scopedTable(t: PublicTable, scope: AnalyticsScope, packBound?: string): string {
  const [column, ids] = t.family === "verifications" ? ["key_space_id", scope.keySpaceIds] : ["namespace_id", scope.namespaceIds];
  /** The scope's conditions on the columns of `table` ("" or a qualifier and a dot). */
  const whereOf = (table: string): string[] => {
    const where = [`${table}${ident(undefined, "workspace_id")} = ${quote(scope.workspaceId)}`];
    // A grant on no API of the workspace reads nothing: an empty list is not "all".
    if (ids !== undefined) where.push(ids.length === 0 ? "1 = 0" : `${table}${ident(undefined, column)} IN (${ids.map(quote).join(", ")})`);
    return where;
  };
  const where = whereOf("");
  const columns = t.columns.map((c) => ident(undefined, c)).join(", ");
  // FORCE INDEX (PRIMARY): the primary key starts with workspace_id, so the server
  // reads this workspace's range and nothing else. Without it the optimizer may
  // choose the `time` index and test the user's conditions on other workspaces'
  // rows before ours; a condition that errors on some value (a BIGINT overflow,
  // "subquery returns more than 1 row") would then answer one bit about them.
  const rows = `SELECT ${columns} FROM ${ident(undefined, t.physical)} FORCE INDEX (PRIMARY) WHERE ${where.join(" AND ")}`;
  if (t.packed === undefined) return `${ident(undefined, t.name)} AS (${rows})`;
  return `${ident(undefined, t.name)} AS (${rows} UNION ALL ${unpacked(t, whereOf("`p`."), packBound)})`;
}

/**
 * The packed events of our CTE, a row each as the raw table has them: the
 * pack's columns, and each event's request id, time (the pack's plus its ms)
 * and last column (credits, passed) through JSON_TABLE (MariaDB 10.6+, MySQL
 * 8.0.4+; src/storage/analytics.ts, packs, writes the arrays). `bound`, the
 * user's own bounds on `time` (Compiler.packBound), leaves out the packs none
 * of whose events could meet them before any is unpacked.
 */
function unpacked(t: PublicTable, where: readonly string[], bound: string | undefined): string {
  const { table, last, type } = t.packed as NonNullable<PublicTable["packed"]>;
  const columns = t.columns
    .map((c) =>
      c === "time"
        ? "CAST(`p`.`time` + INTERVAL `e`.`ms` * 1000 MICROSECOND AS DATETIME(3)) AS `time`"
        : `${c === "request_id" || c === last ? "`e`" : "`p`"}.${ident(undefined, c)}`,
    )
    .join(", ");
  const events = `\`request_id\` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]', \`ms\` BIGINT PATH '$[1]', ${ident(undefined, last)} ${type} PATH '$[2]'`;
  const conditions = [...where];
  if (bound !== undefined) conditions.push(bound);
  return `SELECT ${columns} FROM ${ident(undefined, table)} AS \`p\` FORCE INDEX (PRIMARY) CROSS JOIN JSON_TABLE(\`p\`.\`events\`, '$[*]' COLUMNS (${events})) AS \`e\` WHERE ${conditions.join(" AND ")}`;
}

// ---------------------------------------------------------------------------
// Text to tree

const { Parser } = pkg;
const parser = new Parser();

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

function parse(query: string): Node {
  const { text, inserted } = rewriteCountCalls(query);
  let ast: unknown;
  try {
    ast = parser.astify(text, { database: "mariadb" });
  } catch (err) {
    throw syntaxError(err, query, inserted);
  }
  const statements = Array.isArray(ast) ? ast : [ast];
  if (statements.length === 0) throw new AnalyticsQueryError("invalid_analytics_query", "the query is empty");
  // The executor's pool has no multipleStatements either; this says why up front.
  if (statements.length > 1) throw new AnalyticsQueryError("invalid_analytics_query", `the query has ${statements.length} statements; send one SELECT`);
  const statement = statements[0];
  if (!isNode(statement)) throw new AnalyticsQueryError("invalid_analytics_query", "the query could not be parsed");
  if (statement.type !== "select")
    throw new AnalyticsQueryError("invalid_analytics_query_type", `only SELECT queries are allowed (this is ${String(statement.type).toUpperCase()})`);
  return statement;
}

/**
 * ClickHouse writes count() for count(*), which the parser refuses. Inserts the
 * `*` in every `count ( )` of the query's code, not inside strings, quoted
 * names or comments (so `'count()'` stays text), using the same lexical rules
 * as the parser. Also counts parenthesis nesting (MAX_NESTING), before the
 * parser recurses into it. Returns where each `*` went, so a syntax error's
 * position can be told in the query as the user wrote it.
 */
export function rewriteCountCalls(query: string): { text: string; inserted: number[] } {
  const inserted: number[] = [];
  let depth = 0;
  let i = 0;
  while (i < query.length) {
    const c = query[i] as string;
    if (c === "'" || c === '"' || c === "`") i = skipQuoted(query, i);
    else if (startsComment(query, i)) i = skipComment(query, i);
    else if (c === "(") {
      depth++;
      if (depth > MAX_NESTING)
        throw new AnalyticsQueryError("invalid_analytics_query", `the query nests parentheses more than ${MAX_NESTING} deep (at ${positionOf(query, i)})`);
      i++;
    } else if (c === ")") {
      depth--;
      i++;
    } else if (isWordChar(c)) {
      let j = i + 1;
      while (j < query.length && isWordChar(query[j] as string)) j++;
      if (query.slice(i, j).toLowerCase() === "count") {
        const open = skipSpace(query, j);
        if (query[open] === "(" && query[skipSpace(query, open + 1)] === ")") inserted.push(open + 1);
      }
      i = j;
    } else i++;
  }
  let text = "";
  let from = 0;
  for (const at of inserted) {
    text += `${query.slice(from, at)}*`;
    from = at;
  }
  return { text: text + query.slice(from), inserted };
}

// The parser's identifier characters are ASCII letters, digits, _ and $, and letters beyond ASCII.
const isWordChar = (c: string): boolean => /[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) >= 0x80;

/** The index after the string or quoted name starting at i: a backslash escapes the next character; a doubled quote is one. */
function skipQuoted(s: string, i: number): number {
  const q = s[i];
  let j = i + 1;
  while (j < s.length) {
    const c = s[j];
    if (c === "\\" && q !== "`") j += 2;
    else if (c === q) {
      if (s[j + 1] !== q) return j + 1;
      j += 2;
    } else j++;
  }
  return s.length;
}

// The parser takes `--` as a comment even without the space MySQL wants after it.
const startsComment = (s: string, i: number): boolean => s[i] === "#" || s.startsWith("--", i) || s.startsWith("/*", i);

function skipComment(s: string, i: number): number {
  if (s.startsWith("/*", i)) {
    const end = s.indexOf("*/", i + 2);
    return end < 0 ? s.length : end + 2;
  }
  const end = s.indexOf("\n", i);
  return end < 0 ? s.length : end + 1;
}

function skipSpace(s: string, i: number): number {
  let j = i;
  while (j < s.length) {
    if (/\s/.test(s[j] as string)) j++;
    else if (startsComment(s, j)) j = skipComment(s, j);
    else break;
  }
  return j;
}

function positionOf(query: string, offset: number): string {
  const before = query.slice(0, offset);
  const line = before.split("\n").length;
  return `line ${line}, column ${offset - before.lastIndexOf("\n")}`;
}

/** A parser failure, told short: where, and what it wanted when that is a short list. */
function syntaxError(err: unknown, query: string, inserted: number[]): AnalyticsQueryError {
  if (err instanceof RangeError) return new AnalyticsQueryError("invalid_analytics_query", "the query is nested too deeply to parse");
  const e = err as { location?: { start?: { offset?: unknown } }; expected?: unknown; found?: unknown };
  const at = e.location?.start?.offset;
  if (typeof at !== "number") return new AnalyticsQueryError("invalid_analytics_query", "the query could not be parsed");
  // Back to the user's offsets: each inserted `*` before the error moved it one to the right.
  let offset = at;
  for (const [k, p] of inserted.entries()) if (p + k < at) offset--;
  const found = offset >= query.length ? "the end of the query" : JSON.stringify(query.slice(offset, offset + 20));
  const expected = Array.isArray(e.expected)
    ? [
        ...new Set(
          e.expected
            .map((x: unknown) => (isNode(x) && x.type === "literal" && typeof x.text === "string" ? x.text : undefined))
            .filter((x): x is string => x !== undefined && !["#", "--", "/*"].includes(x)),
        ),
      ]
    : [];
  const wanted = expected.length > 0 && expected.length <= 6 ? `; expected ${expected.map((x) => JSON.stringify(x)).join(", ")}` : "";
  return new AnalyticsQueryError("invalid_analytics_query", `syntax error at ${positionOf(query, offset)}, near ${found}${wanted}`);
}

// ---------------------------------------------------------------------------
// Tree to SQL

interface Ctx {
  /** The user's CTE names in scope here (case-sensitive, as the server's table names are). */
  scope: ReadonlySet<string>;
  /** Where we are, for messages: "the SELECT list", "WHERE", ... */
  clause: string;
  /** The user's CTE whose body this is, for messages. */
  cte?: string | undefined;
  depth: number;
}

const placeOf = (ctx: Ctx): string => (ctx.cte === undefined ? ctx.clause : `${ctx.clause} of WITH ${shown(ctx.cte)}`);

const refuse = (message: string, ctx?: Ctx): never => {
  throw new AnalyticsQueryError("invalid_analytics_query", ctx === undefined ? message : `${message} (in ${placeOf(ctx)})`);
};
const tooLarge = () => new AnalyticsQueryError("invalid_analytics_query", `the query is too large once compiled (over ${MAX_COMPILED_LENGTH} characters)`);

/** How a name is shown in a message: short, and quoted only when it would not read as a name. */
const shown = (name: string): string => {
  const cut = name.length > 40 ? `${name.slice(0, 40)}...` : name;
  return /^[A-Za-z0-9_.*]+$/.test(cut) ? cut : JSON.stringify(cut);
};

/** A keyword the parser matched (FOR UPDATE, FULL JOIN), for a message. */
const keyword = (v: unknown): string =>
  String(v)
    .toUpperCase()
    .replace(/[^A-Z_ ]/g, "")
    .slice(0, 40);

/**
 * A name as compiled SQL. Names are restricted to letters, digits and _ (the
 * public tables and columns are such names; aliases may be too): nothing can
 * then close the backticks, on any server setting.
 */
function ident(ctx: Ctx | undefined, name: string, what = "name"): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name))
    refuse(`${what} ${shown(name)} is not allowed: names are letters, digits and _, at most 64, not starting with a digit`, ctx);
  return `\`${name}\``;
}

/**
 * A string as a compiled literal. Only `'` and `\` (and NUL) are escaped, the
 * quote by doubling: with or without NO_BACKSLASH_ESCAPES the literal ends
 * where we end it (only a backslash's meaning would change), and no
 * multi-byte trick applies to JS strings sent as UTF-8. This, not mysql2's
 * escape, because domain/ may not import mysql2 (.dependency-cruiser.cjs).
 */
export function quote(value: string): string {
  return `'${value.replace(/[\\'\0]/g, (c) => (c === "'" ? "''" : c === "\\" ? "\\\\" : "\\0"))}'`;
}

/** The value of a string literal as the parser kept it (raw, escapes and doubled quotes included), as MySQL reads it. */
function decodeString(raw: string, q: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === "\\" && i + 1 < raw.length) {
      const n = raw[++i] as string;
      // MySQL keeps the backslash of \% and \_ (they are LIKE's escapes); other unknown escapes are the character itself.
      out += n === "%" || n === "_" ? `\\${n}` : (ESCAPES[n] ?? n);
    } else if (c === q && raw[i + 1] === q) {
      out += q;
      i++;
    } else out += c;
  }
  return out;
}
const ESCAPES: Record<string, string> = { "0": "\0", b: "\b", n: "\n", r: "\r", t: "\t", Z: "\x1a" };

/** A name the parser gives as a string or as {type, value}. */
function nameOf(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (isNode(v) && typeof v.value === "string" && (v.type === "default" || v.type === "backticks_quote_string" || v.type === "origin")) return v.value;
  return undefined;
}

/** Refuses any field of `node` that holds something and is not one this file understands. */
function only(node: Node, keys: readonly string[], what: string, ctx: Ctx): void {
  for (const [k, v] of Object.entries(node)) {
    if (v === null || v === undefined || keys.includes(k)) continue;
    refuse(`${what} with ${shown(k)} is not supported`, ctx);
  }
}

const SET_OPS = new Set(["union", "union all", "union distinct", "except", "intersect"]);
const JOINS = new Set(["INNER JOIN", "LEFT JOIN", "RIGHT JOIN", "CROSS JOIN"]);
const SELECT_KEYS = [
  "type",
  "with",
  "options",
  "distinct",
  "columns",
  "into",
  "from",
  "where",
  "groupby",
  "having",
  "orderby",
  "limit",
  "locking_read",
  "window",
  "collate",
  "parentheses_symbol",
  "_next",
  "set_op",
  "_orderby",
  "_limit",
];
const COMPARISONS = new Set(["=", "!=", "<>", "<", "<=", ">", ">="]);
const ARITHMETIC = new Set(["+", "-", "*", "/", "%", "DIV", "MOD"]);
const LOGICAL = new Set(["AND", "OR"]);

/** x op time as time op' x. */
const FLIPPED: Record<string, string> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=" };

/**
 * A chain of ANDs and ORs as the sequence of its operands and operators, in
 * the tree's order whatever the parser's grouping (parenthesized parts are
 * operands); `visit` sees each AND or OR node of the chain. Compiler.logical
 * groups the sequence again as MySQL binds it.
 */
function logicalChain(root: unknown, visit?: (n: Node) => void): { operands: unknown[]; ops: string[] } {
  const operands: unknown[] = [];
  const ops: string[] = [];
  const flatten = (n: unknown): void => {
    if (isNode(n) && n.type === "binary_expr" && LOGICAL.has(String(n.operator).toUpperCase()) && (n === root || n.parentheses !== true)) {
      visit?.(n);
      flatten(n.left);
      ops.push(String(n.operator).toUpperCase());
      flatten(n.right);
    } else operands.push(n);
  };
  flatten(root);
  return { operands, ops };
}

/** A WHERE's conjuncts: the operands of its chain, or none when the chain has an OR (a bound under an OR binds nothing). */
function conjuncts(where: unknown): unknown[] {
  const { operands, ops } = logicalChain(where);
  return ops.includes("OR") ? [] : operands;
}

/**
 * Whether a bound on time may be copied into our CTE: a string, TIMESTAMP or
 * DATE literal, now() or today(), or one of those plus or minus INTERVAL n of
 * a unit (n a whole number). The same value for every row, and none can raise
 * an error (a date out of range is NULL, with a warning): our CTE's copy is
 * evaluated even where the user's own WHERE never is (under `1 = 0 AND`, in a
 * CTE no one reads), so an expression that can fail (an integer overflow,
 * `18446744073709551615 + 1`) would fail queries that run without it.
 */
function boundable(v: unknown): boolean {
  if (!isNode(v)) return false;
  switch (v.type) {
    case "single_quote_string":
    case "timestamp":
    case "date":
    case "datetime":
      return true;
    case "function": {
      const n = isNode(v.name) && Array.isArray(v.name.name) && v.name.name.length === 1 ? nameOf(v.name.name[0])?.toLowerCase() : undefined;
      const args = v.args == null ? [] : isNode(v.args) && Array.isArray(v.args.value) ? v.args.value : undefined;
      return (n === "now" || n === "today") && args?.length === 0 && v.over == null;
    }
    case "binary_expr": {
      const i = v.right;
      const count = isNode(i) && i.type === "interval" && isNode(i.expr) && i.expr.type === "number" ? Number(i.expr.value) : Number.NaN;
      return (v.operator === "+" || v.operator === "-") && Number.isSafeInteger(count) && count >= 0 && boundable(v.left);
    }
    default:
      return false;
  }
}

class Compiler {
  /** The public tables read. */
  readonly tables = new Set<string>();
  private readonly columns: Array<{ name: string; qualifier: string | undefined; ctx: Ctx }> = [];
  /** Names the query itself gives columns (lower case: MySQL's column names ignore case). */
  private readonly aliases = new Set<string>();
  /** Table names and aliases in FROM clauses and CTE names: what a column may be qualified with. */
  private readonly qualifiers = new Set<string>();
  /** See MAX_WORK. */
  private work = 0;
  /** Each FROM's reference to a public table with packs: how many (table()) ... */
  private readonly packedSeen = new Map<string, number>();
  /** ... and, by select(), each one's bounds on time for the packs (undefined: none). */
  private readonly packedBounds = new Map<string, Array<string | undefined>>();

  constructor(private readonly family: AnalyticsFamily) {}

  private deeper(ctx: Ctx, clause = ctx.clause): Ctx {
    if (ctx.depth >= MAX_DEPTH) refuse(`the query nests more than ${MAX_DEPTH} levels deep`, ctx);
    return { ...ctx, clause, depth: ctx.depth + 1 };
  }

  /**
   * A query expression: [WITH ...] branch [UNION|EXCEPT|INTERSECT branch]... [ORDER BY] [LIMIT].
   * `top` is the statement itself: its WITH items are handed back to go after
   * ours, and its LIMIT is capped.
   */
  query(node: Node, outer: Ctx, top?: { cap: number; ctes: string[] }): string {
    const ctx = this.deeper(outer);
    let scope = ctx.scope;
    const withItems: string[] = [];
    if (node.with !== null && node.with !== undefined) {
      if (!Array.isArray(node.with)) return refuse("unsupported WITH clause", ctx);
      const names = new Set(scope);
      for (const item of node.with) withItems.push(this.cte(item, names, ctx));
      scope = names;
    }
    const inner: Ctx = { ...ctx, scope };

    const branches: Node[] = [];
    const ops: string[] = [];
    for (let b: unknown = node; ; ) {
      if (!isNode(b) || b.type !== "select") return refuse("only SELECT may be combined with UNION, EXCEPT or INTERSECT", ctx);
      only(b, SELECT_KEYS, "SELECT", ctx);
      if (b !== node && (b.with || b._orderby || b._limit)) return refuse("WITH, ORDER BY and LIMIT of a whole UNION go at its start and end", ctx);
      branches.push(b);
      if (b._next === null || b._next === undefined) break;
      const op = String(b.set_op ?? "").toLowerCase();
      if (!SET_OPS.has(op)) refuse(`${shown(String(b.set_op))} is not supported; use UNION, UNION ALL, EXCEPT or INTERSECT`, ctx);
      ops.push(op.toUpperCase());
      b = b._next;
    }

    // ORDER BY / LIMIT after the last branch, unparenthesized, belong to the whole query
    // (the parser hangs them on that branch); those after a parenthesized one are in _orderby/_limit.
    const last = branches[branches.length - 1] as Node;
    let orderby = node._orderby;
    let limit = node._limit;
    const lastOwnsTail = !last.parentheses_symbol || (branches.length === 1 && orderby == null && limit == null);
    if (lastOwnsTail) {
      if ((last.orderby != null && orderby != null) || (last.limit != null && limit != null)) return refuse("two ORDER BY or LIMIT clauses for one query", ctx);
      orderby = last.orderby ?? orderby;
      limit = last.limit ?? limit;
    }

    const parts = branches.map((b) => {
      const own = b === last && lastOwnsTail ? "" : this.orderLimit(b.orderby, b.limit, { ...inner, clause: "ORDER BY" });
      const core = this.select(b, inner);
      return b.parentheses_symbol || own !== "" ? `(${core}${own})` : core;
    });
    let sql = parts[0] as string;
    for (const [k, op] of ops.entries()) sql += ` ${op} ${parts[k + 1]}`;
    sql += this.orderLimit(orderby, limit, { ...inner, clause: "ORDER BY" }, top?.cap);

    if (top !== undefined) top.ctes.push(...withItems);
    else if (withItems.length > 0) sql = `WITH ${withItems.join(", ")} ${sql}`;
    if (sql.length > MAX_COMPILED_LENGTH) throw tooLarge();
    return sql;
  }

  /** One WITH item; adds its name to `names` after its body, which so cannot read itself (nor, by that, a real table of that name). */
  private cte(item: unknown, names: Set<string>, ctx: Ctx): string {
    if (!isNode(item)) return refuse("unsupported WITH clause", ctx);
    only(item, ["name", "stmt", "columns", "recursive"], "WITH", ctx);
    const name = nameOf(item.name) ?? refuse("unsupported WITH clause", ctx);
    const at: Ctx = { ...ctx, clause: "SELECT", cte: name };
    // RECURSIVE would also let an item read the ones after it, and loops without end.
    if (item.recursive) refuse("WITH RECURSIVE is not allowed", at);
    this.checkCteName(name, names, at);
    const body = this.subquery(item.stmt, { ...at, scope: new Set(names) }) ?? refuse("unsupported WITH clause", at);
    let columns = "";
    if (Array.isArray(item.columns) && item.columns.length > 0) {
      columns = `(${item.columns
        .map((c) => {
          const n = isNode(c) && c.type === "column_ref" ? nameOf(c.column) : nameOf(c);
          if (n === undefined) return refuse("unsupported WITH column list", at);
          this.aliases.add(n.toLowerCase());
          return ident(at, n, "column");
        })
        .join(", ")})`;
    }
    names.add(name);
    this.qualifiers.add(name);
    return `${ident(at, name, "CTE name")}${columns} AS (${body})`;
  }

  private checkCteName(name: string, names: ReadonlySet<string>, ctx: Ctx): void {
    const lower = name.toLowerCase();
    // Names that could be mistaken for ours (or, on a server whose table names ignore case, be ours) are refused,
    // as is an analytics_* name: our CTEs read those physical tables, and must never read a user's CTE instead.
    if ([...PUBLIC_TABLES.keys()].some((t) => t === lower) || lower.startsWith("analytics_"))
      refuse(`a CTE may not be named ${shown(name)}: that name is a table's`, ctx);
    if (names.has(name)) refuse(`CTE ${shown(name)} is defined twice`, ctx);
  }

  /** SELECT [DISTINCT] ... [FROM ...] [WHERE] [GROUP BY] [HAVING]: ORDER BY and LIMIT are query()'s. */
  private select(node: Node, ctx: Ctx): string {
    if (Array.isArray(node.options) ? node.options.length > 0 : node.options != null)
      refuse(`${shown(String(Array.isArray(node.options) ? node.options.join(" ") : node.options))} is not allowed after SELECT`, ctx);
    if (isNode(node.into) ? Object.values(node.into).some((v) => v !== null && v !== undefined) : node.into != null)
      refuse("SELECT ... INTO is not allowed", ctx);
    if (node.locking_read != null) refuse(`${keyword(node.locking_read)} is not allowed: queries only read`, ctx);
    if (node.window != null) refuse("WINDOW clauses are not supported", ctx);
    if (node.collate != null) refuse("COLLATE is not allowed", ctx);
    if (node.distinct != null && String(node.distinct).toUpperCase() !== "DISTINCT") refuse(`${shown(String(node.distinct))} is not supported`, ctx);

    let sql = `SELECT ${node.distinct != null ? "DISTINCT " : ""}`;
    // FROM first: later clauses may name its aliases.
    const from = node.from == null ? "" : ` FROM ${this.from(node.from, { ...ctx, clause: "FROM" })}`;
    sql += this.selectList(node.columns, { ...ctx, clause: "the SELECT list" });
    sql += from;
    if (node.where != null) sql += ` WHERE ${this.expr(node.where, { ...ctx, clause: "WHERE" })}`;
    this.boundPacks(node, { ...ctx, clause: "WHERE" });
    if (node.groupby != null) sql += this.groupBy(node.groupby, { ...ctx, clause: "GROUP BY" });
    if (node.having != null) sql += ` HAVING ${this.expr(node.having, { ...ctx, clause: "HAVING" })}`;
    return sql;
  }

  /**
   * For each reference in this SELECT's FROM to a public table with packs, the
   * conditions on a pack that its WHERE's bounds on `time` imply: a conjunct
   * `time > x`, `>=`, `=` or `BETWEEN` (x `boundable`) keeps only events at or
   * after x, so only packs whose last event is (`last_time`: a range of the
   * primary key within a key space or namespace; with the whole workspace
   * granted, a filter on its packs' rows that spares unpacking them); `<`,
   * `<=`, `=` or `BETWEEN`'s end, only packs whose first is (`time`, a
   * filter). A conjunct of WHERE holds for every row the
   * SELECT reads from the reference (a row an outer join fills with NULLs
   * fails it too), so leaving out events that fail it changes nothing.
   * `time` is the reference's when qualified by its name or alias, or
   * unqualified with nothing else in FROM.
   */
  private boundPacks(node: Node, ctx: Ctx): void {
    const items = Array.isArray(node.from) ? (node.from as unknown[]) : [];
    for (const item of items) {
      if (!isNode(item) || item.expr != null) continue;
      const name = nameOf(item.table);
      if (name === undefined || ctx.scope.has(name) || PUBLIC_TABLES.get(name)?.packed === undefined) continue;
      const alias = nameOf(item.as) ?? name;
      const mine = (c: unknown): boolean => {
        // Column names ignore case: TIME is time.
        if (!isNode(c) || c.type !== "column_ref" || nameOf(c.column)?.toLowerCase() !== "time") return false;
        const q = c.table == null ? undefined : nameOf(c.table);
        return q === undefined ? items.length === 1 && c.db == null : q === alias && c.db == null && c.schema == null;
      };
      const bounds: string[] = [];
      const at = (column: "last_time" | "time", op: string, x: unknown) => bounds.push(`(\`p\`.\`${column}\` ${op} ${this.expr(x, ctx)})`);
      for (const c of node.where == null ? [] : conjuncts(node.where)) {
        if (!isNode(c) || c.type !== "binary_expr") continue;
        const op = String(c.operator).toUpperCase();
        if (op === "BETWEEN") {
          const r = isNode(c.right) && Array.isArray(c.right.value) && c.right.value.length === 2 ? c.right.value : undefined;
          if (r !== undefined && mine(c.left) && boundable(r[0]) && boundable(r[1])) {
            at("last_time", ">=", r[0]);
            at("time", "<=", r[1]);
          }
          continue;
        }
        if (!COMPARISONS.has(op) || op === "!=" || op === "<>") continue;
        // time op x, or x op time read as time op' x.
        const [x, o] = mine(c.left) && boundable(c.right) ? [c.right, op] : mine(c.right) && boundable(c.left) ? [c.left, FLIPPED[op] as string] : [];
        if (x === undefined || o === undefined) continue;
        if (o === ">" || o === ">=") at("last_time", o, x);
        else if (o === "<" || o === "<=") at("time", o, x);
        else {
          at("last_time", ">=", x);
          at("time", "<=", x);
        }
      }
      const list = this.packedBounds.get(name) ?? [];
      list.push(bounds.length === 0 ? undefined : bounds.join(" AND "));
      this.packedBounds.set(name, list);
    }
  }

  /**
   * The condition on `table`'s packs that every reference's bounds allow: an
   * OR of each reference's, or undefined (every pack) when one has none, or
   * when a reference was not seen by boundPacks (a FROM it does not read).
   */
  packBound(table: string): string | undefined {
    const bounds = this.packedBounds.get(table) ?? [];
    if (bounds.length === 0 || bounds.length !== this.packedSeen.get(table) || bounds.some((b) => b === undefined)) return undefined;
    return `(${bounds.map((b) => `(${b})`).join(" OR ")})`;
  }

  private selectList(columns: unknown, ctx: Ctx): string {
    if (columns === "*") return "*";
    if (!Array.isArray(columns) || columns.length === 0) return refuse("unsupported SELECT list", ctx);
    return columns
      .map((c) => {
        if (!isNode(c)) return refuse("unsupported SELECT list", ctx);
        only(c, ["expr", "as", "type"], "a column", ctx);
        const expr = this.expr(c.expr, ctx, true);
        if (c.as === null || c.as === undefined) return expr;
        const alias = nameOf(c.as) ?? refuse("unsupported column alias", ctx);
        this.aliases.add(alias.toLowerCase());
        return `${expr} AS ${ident(ctx, alias, "alias")}`;
      })
      .join(", ");
  }

  private from(items: unknown, ctx: Ctx): string {
    if (!Array.isArray(items) || items.length === 0) return refuse("unsupported FROM clause", ctx);
    let sql = "";
    for (const [i, item] of items.entries()) {
      if (!isNode(item)) return refuse("unsupported FROM clause", ctx);
      let piece: string;
      if (item.type === "dual") {
        only(item, ["type"], "FROM DUAL", ctx);
        piece = "DUAL";
      } else if (item.expr != null) {
        only(item, ["expr", "as", "join", "on", "using"], "a subquery in FROM", ctx);
        const sub = this.subquery(item.expr, ctx) ?? refuse("unsupported FROM clause", ctx);
        const alias = nameOf(item.as) ?? refuse("a subquery in FROM needs an alias (AS name)", ctx);
        this.qualifiers.add(alias);
        piece = `(${sub}) AS ${ident(ctx, alias, "alias")}`;
      } else {
        only(item, ["db", "table", "as", "join", "on", "using"], "a table", ctx);
        piece = this.table(item, ctx);
      }
      if (i === 0) {
        if (item.join != null || item.on != null || item.using != null) return refuse("unsupported FROM clause", ctx);
        sql = piece;
        continue;
      }
      if (item.join == null) {
        if (item.on != null || item.using != null) return refuse("unsupported FROM clause", ctx);
        sql += `, ${piece}`;
        continue;
      }
      const join = String(item.join).toUpperCase();
      if (!JOINS.has(join)) refuse(`${keyword(join)} is not supported; use INNER, LEFT, RIGHT or CROSS JOIN`, ctx);
      sql += ` ${join} ${piece}`;
      if (item.on != null) sql += ` ON ${this.expr(item.on, { ...ctx, clause: "JOIN ... ON" })}`;
      if (item.using != null) {
        const using = Array.isArray(item.using) ? item.using : refuse("unsupported USING", ctx);
        const at = { ...ctx, clause: "JOIN ... USING" };
        sql += ` USING (${using
          .map((u) => {
            const n = nameOf(u) ?? refuse("unsupported USING", at);
            this.columns.push({ name: n, qualifier: undefined, ctx: at });
            return ident(at, n, "column");
          })
          .join(", ")})`;
      }
    }
    return sql;
  }

  /** A table name in FROM: one of the user's CTEs in scope, or a public table of this family (then one of our CTEs). Nothing else. */
  private table(item: Node, ctx: Ctx): string {
    const name = nameOf(item.table) ?? refuse("unsupported table reference", ctx);
    const db = item.db == null ? undefined : (nameOf(item.db) ?? "?");
    if (db !== undefined)
      throw new AnalyticsQueryError(
        "invalid_analytics_table",
        `table ${shown(`${db}.${name}`)} is not allowed: name a table without a database (in ${placeOf(ctx)})`,
      );
    if (!ctx.scope.has(name)) {
      const t = PUBLIC_TABLES.get(name);
      if (t === undefined || t.family !== this.family) throw this.unknownTable(name, ctx);
      this.tables.add(name);
      if (t.packed !== undefined) this.packedSeen.set(name, (this.packedSeen.get(name) ?? 0) + 1);
    }
    const alias = item.as == null ? undefined : (nameOf(item.as) ?? refuse("unsupported table alias", ctx));
    this.qualifiers.add(alias ?? name);
    return alias === undefined ? ident(ctx, name, "table") : `${ident(ctx, name, "table")} AS ${ident(ctx, alias, "alias")}`;
  }

  private unknownTable(name: string, ctx: Ctx): AnalyticsQueryError {
    const mine = tablesOf(this.family);
    const lower = name.toLowerCase();
    const other = PUBLIC_TABLES.get(lower);
    const physical = [...PUBLIC_TABLES.values()].find((t) => t.physical === lower);
    let hint: string;
    if (other !== undefined && other.family !== this.family) hint = `it is a ${other.family} table; this endpoint reads ${this.family} tables`;
    else if (other !== undefined) hint = `table names are case-sensitive; use ${other.name}`;
    else if (physical !== undefined && physical.family === this.family) hint = `use ${physical.name}`;
    else hint = `the ${this.family} tables are ${mine.join(", ")}`;
    return new AnalyticsQueryError("invalid_analytics_table", `table ${shown(name)} is not allowed; ${hint} (in ${placeOf(ctx)})`);
  }

  private groupBy(groupby: unknown, ctx: Ctx): string {
    const g = isNode(groupby) ? groupby : { columns: groupby };
    only(g, ["columns", "modifiers"], "GROUP BY", ctx);
    if (!Array.isArray(g.columns) || g.columns.length === 0) return refuse("unsupported GROUP BY", ctx);
    let sql = ` GROUP BY ${g.columns.map((c) => this.expr(c, ctx)).join(", ")}`;
    for (const m of Array.isArray(g.modifiers) ? g.modifiers : []) {
      if (m == null) continue;
      if (isNode(m) && typeof m.value === "string" && m.value.toLowerCase() === "with rollup") sql += " WITH ROLLUP";
      else refuse("unsupported GROUP BY modifier", ctx);
    }
    return sql;
  }

  /** ORDER BY and LIMIT; `cap` lowers (or adds) the LIMIT of the statement as a whole. */
  private orderLimit(orderby: unknown, limit: unknown, ctx: Ctx, cap?: number): string {
    let sql = "";
    if (orderby != null) {
      if (!Array.isArray(orderby) || orderby.length === 0) return refuse("unsupported ORDER BY", ctx);
      sql += ` ORDER BY ${orderby
        .map((o) => {
          if (!isNode(o)) return refuse("unsupported ORDER BY", ctx);
          only(o, ["expr", "type"], "ORDER BY", ctx);
          const dir = o.type == null ? "" : String(o.type).toUpperCase();
          if (dir !== "" && dir !== "ASC" && dir !== "DESC") refuse("unsupported ORDER BY", ctx);
          // A bare number is a column position; written like any literal it stays one.
          return `${this.expr(o.expr, ctx)}${dir === "" ? "" : ` ${dir}`}`;
        })
        .join(", ")}`;
    }
    let count: bigint | undefined;
    let offset: bigint | undefined;
    if (limit != null) {
      const at = { ...ctx, clause: "LIMIT" };
      if (!isNode(limit) || !Array.isArray(limit.value)) return refuse("unsupported LIMIT", at);
      only(limit, ["seperator", "value"], "LIMIT", at);
      const values = limit.value.map((v) => wholeNumber(v) ?? refuse("LIMIT and OFFSET must be whole numbers", at));
      const sep = String(limit.seperator ?? "").toLowerCase();
      if (values.length === 1 && sep === "") count = values[0];
      else if (values.length === 2 && sep === ",") [offset, count] = values;
      else if (values.length === 2 && sep === "offset") [count, offset] = values;
      else return refuse("unsupported LIMIT", at);
    }
    if (cap !== undefined && (count === undefined || count > BigInt(cap))) count = BigInt(cap);
    if (count !== undefined) sql += ` LIMIT ${count}`;
    if (offset !== undefined) sql += ` OFFSET ${offset}`;
    return sql;
  }

  // -------------------------------------------------------------------------
  // Expressions. Every operator's result is parenthesized, so the compiled text
  // groups exactly as the tree does whatever the server's precedence rules.

  private expr(node: unknown, outer: Ctx, star = false): string {
    const ctx = this.deeper(outer);
    if (!isNode(node)) return refuse("unsupported expression", ctx);
    const sub = this.subquery(node, ctx);
    if (sub !== undefined) return `(${sub})`;
    const sql = this.exprOf(node, ctx, star);
    this.work += sql.length;
    if (sql.length > MAX_COMPILED_LENGTH || this.work > MAX_WORK) throw tooLarge();
    return sql;
  }

  private exprOf(node: Node, ctx: Ctx, star: boolean): string {
    switch (node.type) {
      case "column_ref":
        return this.column(node, ctx, star);
      case "number":
      case "bigint":
        only(node, ["type", "value", "parentheses"], "a number", ctx);
        return numberLiteral(node.value) ?? refuse(`number ${shown(String(node.value))} is not supported`, ctx);
      case "single_quote_string":
        only(node, ["type", "value", "parentheses"], "a string", ctx);
        return quote(decodeString(String(node.value), "'"));
      case "double_quote_string":
        // A string in MySQL, a name in ClickHouse: either reading would surprise someone.
        return refuse(`"${shown(String(node.value))}" is ambiguous: use 'single quotes' for text, or no quotes (or backticks) for a column`, ctx);
      case "bool":
        only(node, ["type", "value", "parentheses"], "a boolean", ctx);
        return node.value === true ? "TRUE" : "FALSE";
      case "null":
        only(node, ["type", "value", "parentheses"], "NULL", ctx);
        return "NULL";
      case "date":
      case "timestamp":
      case "datetime":
        return this.timeLiteral(node, ctx);
      case "binary_expr":
        return this.binary(node, ctx);
      case "unary_expr":
        return this.unary(node, ctx);
      case "function":
        return this.call(node, ctx);
      case "aggr_func":
        return this.aggregate(node, ctx);
      case "case":
        return this.caseExpr(node, ctx);
      case "cast":
        return this.cast(node, ctx);
      case "interval":
        return this.interval(node, ctx).sql;
      case "expr_list":
        // A row constructor, as in (a, b) IN ((1, 2)).
        only(node, ["type", "value", "parentheses"], "a list", ctx);
        return `(${this.list(node.value, ctx)})`;
      case "var":
        return refuse(`variables (${shown(`${String(node.prefix ?? "@")}${String(node.name)}`)}) are not allowed`, ctx);
      case "param":
        return refuse("placeholders are not allowed", ctx);
      case "origin":
        return refuse(node.value === "?" ? "placeholders (?) are not allowed" : `${shown(String(node.value))} is not supported here`, ctx);
      case "star":
        if (!star) refuse("* is allowed only in the SELECT list and count(*)", ctx);
        return "*";
      default:
        return refuse(`unsupported expression (${shown(String(node.type))})`, ctx);
    }
  }

  /** A parsed subquery ({ast, tableList, columnList, parentheses}, no type) compiled, or undefined when v is not one. */
  private subquery(v: unknown, ctx: Ctx): string | undefined {
    if (!isNode(v) || v.type != null || !isNode(v.ast)) return undefined;
    only(v, ["ast", "tableList", "columnList", "parentheses", "_parentheses"], "a subquery", ctx);
    return this.query(v.ast, ctx);
  }

  private list(values: unknown, ctx: Ctx): string {
    if (!Array.isArray(values) || values.length === 0) return refuse("unsupported list", ctx);
    return values.map((v) => this.expr(v, ctx)).join(", ");
  }

  private column(node: Node, ctx: Ctx, star: boolean): string {
    only(node, ["type", "table", "column", "db", "schema", "collate", "parentheses"], "a column", ctx);
    const name =
      nameOf(node.column) ?? (isNode(node.column) && isNode(node.column.expr) ? nameOf(node.column.expr) : undefined) ?? refuse("unsupported column", ctx);
    const qualifier = node.table == null ? undefined : (nameOf(node.table) ?? refuse("unsupported column", ctx));
    if (node.db != null || node.schema != null)
      refuse(`column ${shown(`${nameOf(node.db ?? node.schema) ?? "?"}.${qualifier}.${name}`)} is not allowed: name no database`, ctx);
    if (node.collate != null) refuse("COLLATE is not allowed", ctx);
    const prefix = qualifier === undefined ? "" : `${ident(ctx, qualifier, "table")}.`;
    if (name === "*") {
      if (!star) refuse("* is allowed only in the SELECT list and count(*)", ctx);
      if (qualifier !== undefined) this.columns.push({ name, qualifier, ctx });
      return `${prefix}*`;
    }
    this.columns.push({ name, qualifier, ctx });
    return `${prefix}${ident(ctx, name, "column")}`;
  }

  private timeLiteral(node: Node, ctx: Ctx): string {
    only(node, ["type", "value", "parentheses"], "a date", ctx);
    const value = decodeString(String(node.value), "'");
    if (node.type === "date") {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) refuse(`DATE ${shown(value)} is not a date (YYYY-MM-DD)`, ctx);
      return `DATE ${quote(value)}`;
    }
    if (!/^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$/.test(value)) refuse(`TIMESTAMP ${shown(value)} is not a time (YYYY-MM-DD hh:mm:ss)`, ctx);
    return `TIMESTAMP ${quote(value)}`;
  }

  private binary(node: Node, ctx: Ctx): string {
    only(node, ["type", "operator", "left", "right", "parentheses"], "an operator", ctx);
    const op = String(node.operator).toUpperCase();
    if (op === "||" || op === "&&")
      // Concatenation in ClickHouse, OR/AND in MySQL (unless the server's sql_mode says otherwise).
      return refuse(`operator ${op} is ambiguous; use ${op === "||" ? "concat(a, b) or OR" : "AND"}`, ctx);
    if (LOGICAL.has(op)) return this.logical(node, ctx);
    // The parser binds XOR tighter than comparisons (a = 1 XOR b = 2 comes as (a = (1 XOR b)) = 2): refused rather than misread.
    if (op === "XOR") return refuse("XOR is not supported; write it with AND, OR and NOT", ctx);
    const left = this.expr(node.left, ctx);
    const right = node.right;
    if (COMPARISONS.has(op) || ARITHMETIC.has(op)) return `(${left} ${op} ${this.expr(right, ctx)})`;
    if (op === "IN" || op === "NOT IN") {
      if (!isNode(right) || right.type !== "expr_list" || !Array.isArray(right.value)) return refuse(`unsupported ${op}`, ctx);
      only(right, ["type", "value", "parentheses"], op, ctx);
      // IN (SELECT ...), not IN ((SELECT ...)): the second is a scalar subquery.
      const sub = right.value.length === 1 ? this.subquery(right.value[0], ctx) : undefined;
      if (sub !== undefined) return `(${left} ${op} (${sub}))`;
      return `(${left} ${op} (${this.list(right.value, ctx)}))`;
    }
    if (op === "BETWEEN" || op === "NOT BETWEEN") {
      if (!isNode(right) || !Array.isArray(right.value) || right.value.length !== 2) return refuse(`unsupported ${op}`, ctx);
      return `(${left} ${op} ${this.expr(right.value[0], ctx)} AND ${this.expr(right.value[1], ctx)})`;
    }
    if (op === "LIKE" || op === "NOT LIKE") {
      if (!isNode(right)) return refuse(`unsupported ${op}`, ctx);
      const { escape: esc, ...pattern } = right;
      let sql = `(${left} ${op} ${this.expr(pattern, ctx)}`;
      if (esc != null) {
        const e = isNode(esc) && isNode(esc.value) && esc.value.type === "single_quote_string" ? esc.value : refuse("ESCAPE takes a string", ctx);
        if (isNode(esc)) only(esc, ["type", "value"], "ESCAPE", ctx);
        sql += ` ESCAPE ${this.expr(e, ctx)}`;
      }
      return `${sql})`;
    }
    if (op === "IS" || op === "IS NOT") {
      if (!isNode(right) || (right.type !== "null" && right.type !== "bool")) return refuse(`${op} takes NULL, TRUE or FALSE`, ctx);
      return `(${left} ${op} ${this.expr(right, ctx)})`;
    }
    return refuse(`operator ${shown(op)} is not allowed`, ctx);
  }

  /**
   * A chain of ANDs and ORs. The parser groups these in order of appearance
   * outside the SELECT list (`a OR b AND c` comes as (a OR b) AND c), where
   * MySQL binds AND first. The operands are in the tree's in-order sequence
   * whatever the grouping, so the chain is read as that sequence and grouped
   * again: an OR of ANDs. Parenthesized parts are operands (and get the same
   * treatment inside).
   */
  private logical(root: Node, ctx: Ctx): string {
    const { operands, ops } = logicalChain(root, (n) => only(n, ["type", "operator", "left", "right", "parentheses"], "an operator", ctx));
    const sql = operands.map((o) => this.expr(o, ctx));
    const ors: string[][] = [[sql[0] as string]];
    for (const [i, op] of ops.entries()) {
      if (op === "OR") ors.push([sql[i + 1] as string]);
      else (ors[ors.length - 1] as string[]).push(sql[i + 1] as string);
    }
    const fold = (items: string[], op: string) => items.reduce((a, b) => `(${a} ${op} ${b})`);
    return fold(
      ors.map((ands) => fold(ands, "AND")),
      "OR",
    );
  }

  private unary(node: Node, ctx: Ctx): string {
    only(node, ["type", "operator", "expr", "parentheses"], "an operator", ctx);
    const op = String(node.operator).toUpperCase();
    if (op === "-") return `(-${this.expr(node.expr, ctx)})`;
    if (op === "+") return this.expr(node.expr, ctx);
    if (op === "NOT" || op === "!") return `(NOT ${this.expr(node.expr, ctx)})`;
    if (op === "NOT EXISTS") {
      return `(NOT EXISTS (${this.subquery(node.expr, ctx) ?? refuse("NOT EXISTS takes a subquery", ctx)}))`;
    }
    return refuse(`operator ${shown(op)} is not allowed`, ctx);
  }

  private refuseFunction(name: string, ctx: Ctx): never {
    throw new AnalyticsQueryError("invalid_analytics_function", `function ${shown(name)} is not allowed (in ${placeOf(ctx)})`);
  }

  private call(node: Node, ctx: Ctx): string {
    only(node, ["type", "name", "args", "over", "parentheses"], "a function call", ctx);
    const n = isNode(node.name) ? node.name : refuse("unsupported function call", ctx);
    const parts = Array.isArray(n.name) ? n.name.map(nameOf) : [];
    const name = parts.length === 1 ? parts[0] : undefined;
    if (name === undefined || n.schema != null) return this.refuseFunction([nameOf(n.schema), ...parts].filter((p) => p !== undefined).join("."), ctx);
    if (node.over != null) refuse(`window functions (${shown(name)} OVER ...) are not supported`, ctx);
    const args =
      node.args == null
        ? []
        : isNode(node.args) && node.args.type === "expr_list" && Array.isArray(node.args.value)
          ? spreadArgs(node.args.value)
          : refuse("unsupported arguments", ctx);
    // NOT (x) comes as a call of NOT.
    if (name.toUpperCase() === "NOT" && args.length === 1) return `(NOT ${this.expr(args[0], ctx)})`;
    if (name.toLowerCase() === "exists") {
      const sub = args.length === 1 ? this.subquery(args[0], ctx) : undefined;
      return `(EXISTS (${sub ?? refuse("EXISTS takes a subquery", ctx)}))`;
    }
    return this.translate(name, args, false, ctx);
  }

  private aggregate(node: Node, ctx: Ctx): string {
    only(node, ["type", "name", "args", "over", "parentheses"], "an aggregate", ctx);
    const name = String(node.name);
    if (node.over != null) refuse(`window functions (${shown(name)} OVER ...) are not supported`, ctx);
    const a = isNode(node.args) ? node.args : refuse("unsupported arguments", ctx);
    only(a, ["expr", "distinct", "parentheses"], name, ctx);
    if (a.distinct != null && String(a.distinct).toUpperCase() !== "DISTINCT") refuse(`${shown(String(a.distinct))} is not supported`, ctx);
    const args = isNode(a.expr) && a.expr.type === "expr_list" && Array.isArray(a.expr.value) ? a.expr.value : [a.expr];
    return this.translate(name, args, a.distinct != null, ctx);
  }

  /** An allowed function's translation (sql-functions.ts), given its compiled arguments. */
  private translate(name: string, nodes: readonly unknown[], distinct: boolean, ctx: Ctx): string {
    const fn = SQL_FUNCTIONS.get(name.toLowerCase()) ?? this.refuseFunction(name, ctx);
    const [min, max] = fn.arity;
    if (nodes.length < min || nodes.length > max)
      refuse(`function ${shown(name)} takes ${min === max ? min : `${min} to ${max}`} argument${max === 1 ? "" : "s"} (got ${nodes.length})`, ctx);
    if (distinct && !fn.distinct) refuse(`function ${shown(name)} does not take DISTINCT`, ctx);
    const isCount = name.toLowerCase() === "count";
    const args = nodes.map((n) => this.arg(n, ctx, isCount && !distinct && nodes.length === 1));
    return fn.translate({
      name,
      args,
      distinct,
      refuse: (message) => refuse(message, ctx),
    });
  }

  private arg(node: unknown, ctx: Ctx, star: boolean): Arg {
    if (isNode(node) && node.type === "interval") {
      const iv = this.interval(node, ctx);
      return { sql: iv.sql, interval: { unit: iv.unit, count: iv.count } };
    }
    const sql = this.expr(node, ctx, star);
    if (!isNode(node)) return { sql };
    if (node.type === "star" || (node.type === "column_ref" && node.column === "*")) return { sql };
    if (node.type === "number") return { sql, literal: Number(node.value) };
    if (node.type === "single_quote_string") return { sql, literal: decodeString(String(node.value), "'") };
    if (node.type === "column_ref" && node.table == null) return { sql, column: nameOf(node.column) };
    return { sql };
  }

  private interval(node: Node, ctx: Ctx): { sql: string; unit: string; count: number | undefined } {
    only(node, ["type", "expr", "unit", "parentheses"], "INTERVAL", ctx);
    const unit = String(node.unit).toUpperCase();
    if (!INTERVAL_UNITS.has(unit)) refuse(`INTERVAL unit ${shown(unit)} is not supported; use one of ${[...INTERVAL_UNITS].join(", ")}`, ctx);
    const e = node.expr;
    const count = isNode(e) && e.type === "number" && Number.isSafeInteger(Number(e.value)) ? Number(e.value) : undefined;
    return { sql: `INTERVAL ${this.expr(e, ctx)} ${unit}`, unit, count };
  }

  private caseExpr(node: Node, ctx: Ctx): string {
    only(node, ["type", "expr", "args", "parentheses"], "CASE", ctx);
    if (!Array.isArray(node.args) || node.args.length === 0) return refuse("unsupported CASE", ctx);
    let sql = node.expr == null ? "CASE" : `CASE ${this.expr(node.expr, ctx)}`;
    for (const [i, arm] of node.args.entries()) {
      if (!isNode(arm)) return refuse("unsupported CASE", ctx);
      if (arm.type === "when") {
        only(arm, ["type", "cond", "result"], "WHEN", ctx);
        sql += ` WHEN ${this.expr(arm.cond, ctx)} THEN ${this.expr(arm.result, ctx)}`;
      } else if (arm.type === "else" && i === node.args.length - 1) {
        only(arm, ["type", "result"], "ELSE", ctx);
        sql += ` ELSE ${this.expr(arm.result, ctx)}`;
      } else return refuse("unsupported CASE", ctx);
    }
    return `(${sql} END)`;
  }

  private cast(node: Node, ctx: Ctx): string {
    only(node, ["type", "keyword", "expr", "symbol", "target", "parentheses"], "CAST", ctx);
    const target = Array.isArray(node.target) && node.target.length === 1 && isNode(node.target[0]) ? node.target[0] : undefined;
    if (String(node.keyword).toLowerCase() !== "cast" || String(node.symbol).toLowerCase() !== "as" || target === undefined)
      return refuse("unsupported CAST", ctx);
    only(target, ["dataType", "length", "scale", "parentheses", "suffix"], "CAST", ctx);
    if (Array.isArray(target.suffix) && target.suffix.length > 0) refuse("unsupported CAST", ctx);
    const type = String(target.dataType).toUpperCase();
    const len = target.length == null ? undefined : Number(target.length);
    const scale = target.scale == null ? undefined : Number(target.scale);
    const ok = (v: number | undefined, max: number) => v === undefined || (Number.isInteger(v) && v >= 0 && v <= max);
    let to: string | undefined;
    if (["SIGNED", "SIGNED INTEGER", "UNSIGNED", "UNSIGNED INTEGER", "DATE", "DOUBLE"].includes(type) && len === undefined) to = type;
    else if (type === "CHAR" && ok(len, 65_535) && scale === undefined) to = len === undefined ? "CHAR" : `CHAR(${len})`;
    else if ((type === "DATETIME" || type === "TIME") && ok(len, 6) && scale === undefined) to = len === undefined ? type : `${type}(${len})`;
    else if (type === "DECIMAL" && ok(len, 65) && ok(scale, 30))
      to = len === undefined ? "DECIMAL" : scale === undefined ? `DECIMAL(${len})` : `DECIMAL(${len}, ${scale})`;
    if (to === undefined) return refuse(`CAST to ${shown(type)} is not supported`, ctx);
    return `CAST(${this.expr(node.expr, ctx)} AS ${to})`;
  }

  /**
   * After the walk: every column named is a public column of a table the query
   * reads, or a name the query gave (alias, CTE column). The CTEs already keep
   * the physical columns out of reach; this turns the server's "unknown
   * column" into a message that names the column and the clause.
   */
  checkColumns(): void {
    const known = new Set(this.aliases);
    for (const t of this.tables) for (const c of (PUBLIC_TABLES.get(t) as PublicTable).columns) known.add(c);
    for (const { name, qualifier, ctx } of this.columns) {
      if (qualifier !== undefined && !this.qualifiers.has(qualifier))
        refuse(`${shown(qualifier)} in ${shown(`${qualifier}.${name}`)} is not a table of the query`, ctx);
      if (name !== "*" && !known.has(name.toLowerCase())) {
        const tables = [...this.tables];
        const hint =
          tables.length === 0
            ? ""
            : `; the columns of ${tables.join(", ")} are ${[...new Set(tables.flatMap((t) => PUBLIC_TABLES.get(t)?.columns ?? []))].join(", ")}`;
        refuse(`column ${shown(name)} is not allowed${hint}`, ctx);
      }
    }
  }
}

/**
 * The parser reads `f(a, b OR c)` as OR(left: [a, b], right: c): the argument
 * list swallowed by the first operand of an AND/OR chain. Puts the arguments
 * back as written: a, (b OR c). Without this, sumIf(x, a = 1 OR b = 2) would
 * be refused (never compiled wrongly: an array is not an expression).
 */
function spreadArgs(values: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    const path: Node[] = [];
    let cur: unknown = v;
    while (isNode(cur) && cur.type === "binary_expr" && !Array.isArray(cur.left)) {
      path.push(cur);
      cur = cur.left;
    }
    if (!isNode(cur) || cur.type !== "binary_expr" || !Array.isArray(cur.left) || cur.left.length < 2) {
      out.push(v);
      continue;
    }
    const swallowed = cur.left;
    out.push(...swallowed.slice(0, -1));
    let rebuilt: Node = { ...cur, left: swallowed[swallowed.length - 1] };
    for (const parent of path.reverse()) rebuilt = { ...parent, left: rebuilt };
    out.push(rebuilt);
  }
  return out;
}

/** A non-negative whole number literal (LIMIT, OFFSET). */
function wholeNumber(v: unknown): bigint | undefined {
  if (!isNode(v) || (v.type !== "number" && v.type !== "bigint")) return undefined;
  const s = String(v.value);
  return /^\d{1,20}$/.test(s) ? BigInt(s) : undefined;
}

/** A number as compiled SQL, or undefined when it is not one we can write back exactly. */
function numberLiteral(v: unknown): string | undefined {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return undefined;
    return v < 0 || Object.is(v, -0) ? `(${String(v)})` : String(v);
  }
  if (typeof v === "string" && /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(v)) return v.startsWith("-") ? `(${v})` : v;
  return undefined;
}
