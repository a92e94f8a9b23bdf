import { Readable } from "node:stream";
import type { Pool, PoolConnection, QueryOptions, ResultSetHeader, RowDataPacket } from "mysql2/promise";

/** mysql2's types, named here so that the layers above need no mysql2 import. */
export type { Pool, PoolConnection };
export type Queryable = Pool | PoolConnection;
export type Row = RowDataPacket & Record<string, unknown>;
type Param = string | number | bigint | boolean | null | Buffer;

// Statements with a few parameters run as server-side prepared statements (the
// hot paths). Statements built for a variable number of values (IN lists,
// multi-row VALUES) would make one prepared statement per length on every pooled
// connection, and the server's max_prepared_stmt_count is shared by everyone:
// those run as plain queries with client-side escaping instead.
const PREPARE_UP_TO = 8;

/**
 * Told the duration of every statement run through rows/exec (the metrics of the
 * instance built last in this process). Returns what stops it, so that a closed
 * instance is not kept alive by it.
 */
let observer: ((seconds: number, ok: boolean) => void) | undefined;
export function observeStatements(fn: (seconds: number, ok: boolean) => void): () => void {
  observer = fn;
  return () => {
    if (observer === fn) observer = undefined;
  };
}

async function timed<T>(run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const r = await run();
    observer?.((performance.now() - started) / 1000, true);
    return r;
  } catch (err) {
    observer?.((performance.now() - started) / 1000, false);
    throw withoutValues(err);
  }
}

/**
 * mysql2 sets a failed statement's `sql` to its text with the values in it (a
 * key's hash, meta, a whole analytics batch): logged as is, that would put
 * secrets and megabytes in the logs. The code and message stay.
 */
function withoutValues(err: unknown): unknown {
  if (typeof err === "object" && err !== null && "sql" in err) delete (err as { sql?: unknown }).sql;
  return err;
}

/**
 * Read as a server-side prepared statement whatever its number of parameters:
 * for a statement whose text takes only a few lengths (an IN list padded to a
 * handful of sizes, as storage/keys.ts's batch lookup), so that what the
 * server prepares stays bounded (the comment on PREPARE_UP_TO).
 */
export async function preparedRows<T = Row>(db: Queryable, sql: string, params: readonly Param[]): Promise<T[]> {
  const [r] = await timed(() => db.execute<RowDataPacket[]>(sql, params as Param[]));
  return r as unknown as T[];
}

/** Read (prepared when it has at most a few parameters). */
export async function rows<T = Row>(db: Queryable, sql: string, params: readonly Param[] = []): Promise<T[]> {
  const [r] = await timed(() =>
    params.length <= PREPARE_UP_TO ? db.execute<RowDataPacket[]>(sql, params as Param[]) : db.query<RowDataPacket[]>(sql, params as Param[]),
  );
  return r as unknown as T[];
}

export async function one<T = Row>(db: Queryable, sql: string, params: readonly Param[] = []): Promise<T | undefined> {
  return (await rows<T>(db, sql, params))[0];
}

/** Write (prepared when it has at most a few parameters). */
export async function exec(db: Queryable, sql: string, params: readonly Param[] = []): Promise<ResultSetHeader> {
  const [r] = await timed(() =>
    params.length <= PREPARE_UP_TO ? db.execute<ResultSetHeader>(sql, params as Param[]) : db.query<ResultSetHeader>(sql, params as Param[]),
  );
  return r;
}

/** `?, ?, ?` for an IN list (callers never pass an empty list). */
export const placeholders = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

const isRetryable = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  // Not a lock wait timeout: that already waited its full time, and waiting again
  // several times over would hold the client far past any sensible deadline.
  return code === "ER_LOCK_DEADLOCK";
};

/**
 * A statement that lost a row lock: a deadlock still there after its retries
 * (on a Galera cluster, a certification conflict with a change committed
 * through another node, again and again), or a lock held by another
 * transaction past innodb_lock_wait_timeout. What it was refused for is one
 * row's, not the statement's own.
 */
export const lostRowLock = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === "ER_LOCK_DEADLOCK" || code === "ER_LOCK_WAIT_TIMEOUT";
};

/**
 * Runs an idempotent statement (or group of them) again when InnoDB picked it as
 * a deadlock victim: concurrent inserts of overlapping unique values do that now
 * and then. A short, growing, jittered pause lets the other side finish.
 */
export async function retryingDeadlocks<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5 || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, attempt * 5 + Math.random() * 10));
    }
  }
}

/**
 * Runs fn in a transaction on one connection; rolls back on any error. A
 * deadlock (InnoDB chose this transaction as the victim) is retried a few times:
 * fn must only touch the database, so running it again is safe.
 */
export async function transaction<T>(pool: Pool, fn: (conn: PoolConnection) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const result = await fn(conn);
      await conn.commit();
      return result;
    } catch (err) {
      await conn.rollback().catch(() => undefined);
      if (attempt >= 6 || !isRetryable(err)) throw err;
    } finally {
      conn.release();
    }
    await pauseBeforeRetry(attempt);
  }
}

// Retrying at once meets the same rivals in the same order and deadlocks again:
// a growing, jittered pause lets one of them finish first.
const pauseBeforeRetry = (attempt: number) => new Promise((r) => setTimeout(r, attempt * 10 + Math.random() * 20));

/** One statement of a group sent together (commitInOneTrip). */
export interface Statement {
  sql: string;
  params: readonly Param[];
  /**
   * The SQL is complete text with its values written in (no placeholders): sent
   * as it is, never through mysql2's format, which would take a `?` inside one
   * of its strings for a placeholder. Not mixed with statements that have params.
   */
  text?: true;
  /**
   * The statement is `INSERT INTO … VALUES (…)[, (…)…]` whose place in its change
   * nothing counts on but the order of the marked INSERTs: no statement reads
   * LAST_INSERT_ID() for it, and it follows nothing unmarked. In a group
   * (commitWithOthers), such INSERTs into the same table and columns go as one
   * INSERT of all their rows, ahead of the group's other statements, in the order
   * their tables first appear. A LAST_INSERT_ID() read right after its own
   * INSERT still reads that INSERT's value.
   */
  rows?: true;
  /**
   * The data of a `LOAD DATA LOCAL INFILE '<name>'` statement: when the server asks
   * for `name` it is sent `data`. Nothing else can be asked for: a request for any
   * other name fails the query (no file of this machine is ever read).
   */
  infile?: { name: string; data: Buffer };
}

/**
 * Commits statements as one transaction in one round trip: START TRANSACTION,
 * the statements and COMMIT go as a single multi-statement query (values escaped
 * client-side, as every statement with more than a few parameters already is).
 * The server stops at the first failing statement; the transaction it leaves
 * open is rolled back here. For changes that are plain writes, known in full
 * before the first is sent: nothing may depend on an earlier statement's answer
 * (an INSERT ... VALUES (LAST_INSERT_ID(), …) reads the server's own state).
 * Each round trip costs the server ~40 µs of CPU (mysql2's socket write and the
 * wake-up of the database's thread): a plain createKey with its audit record was
 * five of them. A deadlock is retried as in transaction(). Resolves to the
 * statements' own answers, in order (START TRANSACTION's and COMMIT's left out):
 * a `ResultSetHeader` for each write.
 */
export async function commitInOneTrip(pool: Pool, statements: readonly Statement[]): Promise<unknown[]> {
  const sql = ["START TRANSACTION", ...statements.map((s) => s.sql), "COMMIT"].join(";\n");
  const params = statements.flatMap((s) => s.params) as Param[];
  const text = statements.some((s) => s.text);
  if (text && params.length > 0) throw new Error("commitInOneTrip: statements written as text cannot go with statements that have placeholders");
  const files = statements.flatMap((s) => (s.infile === undefined ? [] : [s.infile]));
  const load: QueryOptions | undefined = files.length === 0 ? undefined : { sql, infileStreamFactory: (name: string) => offered(files, name) };
  for (let attempt = 1; ; attempt++) {
    const conn = await pool.getConnection();
    let open = true;
    try {
      // Text goes with `null` values: with none at all mysql2 still scans the whole
      // text for placeholders (sql-escaper's format): up to ~350 KB a batch of 2,000 analytics events.
      const [answers] = await timed(() => (load !== undefined ? conn.query(load, null) : text ? conn.query(sql, null) : conn.query(sql, params)));
      return (answers as unknown[]).slice(1, -1);
    } catch (err) {
      if (load !== undefined && (err as { errno?: number }).errno === undefined) {
        // Failed on our side while a file was asked for (the database named one this
        // query did not offer): mysql2 (3.24.5) ends the file with an empty packet and
        // settles the query at the LOAD's answer, while the statements after it still
        // answer. A ROLLBACK sent now takes their answers, and the next query on the
        // connection the ROLLBACK's (an OK packet for a SELECT). Dropped instead.
        open = false;
        conn.destroy();
        throw err;
      }
      // A connection whose ROLLBACK failed may still hold the transaction open: back
      // in the pool, the next START TRANSACTION on it would commit it implicitly.
      await conn.query("ROLLBACK").catch(() => {
        open = false;
        conn.destroy();
      });
      if (attempt >= 6 || !isRetryable(err)) throw err;
    } finally {
      if (open) conn.release();
    }
    await pauseBeforeRetry(attempt);
  }
}

/** The data offered under `name` (Statement.infile), or a stream that fails the query. */
function offered(files: readonly { name: string; data: Buffer }[], name: string): Readable {
  const file = files.find((f) => f.name === name);
  if (file !== undefined) return Readable.from([file.data]);
  return new Readable({
    read() {
      this.destroy(new Error(`the database asked for ${JSON.stringify(name)}, which this query did not offer`));
    },
  });
}

/** A change waiting for the group it will commit with (commitWithOthers). */
interface Waiting {
  statements: readonly Statement[];
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * At most this many changes, or this many bytes of SQL as sent, share a round
 * trip: far below MariaDB's and MySQL's default max_allowed_packet (16 MB and 64 MB).
 */
const GROUP_MAX_CHANGES = 64;
const GROUP_MAX_BYTES = 256 * 1024;

/** An upper bound of the statements' size as sent: UTF-8, every value escaped (strings up to 2×, Buffers as hex). */
const bytesOf = (statements: readonly Statement[]): number => {
  let n = 0;
  for (const s of statements) {
    n += s.sql.length + 2;
    for (const v of s.params) n += typeof v === "string" ? 2 * Buffer.byteLength(v) + 2 : Buffer.isBuffer(v) ? 2 * v.length + 3 : 24;
  }
  return n;
};

/**
 * A pool's changes waiting to go (commitWithOthers) and its groups at the database.
 * Keyed by pool: the test suites run several databases in one process.
 */
interface Groups {
  waiting: Waiting[];
  /** A setImmediate is set to send what waits (the end of the turn the first change came in). */
  scheduled: boolean;
  inFlight: number;
  /** Set while changes wait for a slot: sends them anyway when it fires (GROUP_WAIT_MAX_MS). */
  overdue: NodeJS.Timeout | undefined;
}
const groupsByPool = new WeakMap<Pool, Groups>();

/**
 * Groups of one pool at the database at once: changes asked for while they are
 * there wait, and go together when one comes back. A group's fixed cost is most
 * of what a small change costs: in SQL alone on MariaDB 10.11 (createKey's audit
 * records, a group a transaction) the database spent 125 µs of CPU a record in
 * groups of 5, 73 in groups of 12 (what createKey's groups held under the
 * bench's load when each turn's changes went at once), 58 in groups of 25 and 50
 * in groups of 50. Measured with `bench:ab` (createKey, 12 rounds, against each
 * turn's changes sent at once): two at a time, keys/s ×1.075 and ×1.024, the
 * database's CPU a key ×0.917 and ×0.941 (groups of 14.5 instead of 10.9); one,
 * ×0.985 and ×0.788 (each group waits out the other's round trip); three or four,
 * ×0.980 and ×1.019, ×0.991 and ×0.988 (no fuller than before).
 */
const GROUPS_IN_FLIGHT = 2;

/**
 * How long changes wait for a slot before they go anyway: a group held at the
 * database (a row lock waited for, up to innodb_lock_wait_timeout) must not hold
 * up every other change of the instance. A group's round trip is a few ms under
 * load; a slot is freed as soon as its group's own answer comes, before a group
 * that failed commits its changes one by one.
 */
export const GROUP_WAIT_MAX_MS = 250;

/**
 * commitInOneTrip for changes that many callers make at once (a plain createKey):
 * the changes asked for in one event-loop turn, or while GROUPS_IN_FLIGHT groups
 * are at the database, go in one round trip, as one transaction holding each of
 * them whole. A change still commits all or nothing. If the group fails on an
 * error one change can cause (ONE_CHANGE_ERRORS: a duplicate id, a value that does
 * not fit, a deadlock or a lock wait), the whole group is rolled back and every
 * change of it is then committed on its own, one after the other, so that the
 * failure reaches the caller whose change it was and the others commit. Any other
 * error (the connection lost, the database read-only or not ready, a statement
 * time limit) fails every change of the group with it, as each alone would have
 * failed: whether a lost COMMIT got through is not known either way.
 *
 * Each round trip costs keyhold's process a socket write and a read, and the
 * database a statement batch and a commit (its log flush): under load, a group of
 * N keys costs one of each instead of N (measured in bench/README.md, createKey).
 */
export function commitWithOthers(pool: Pool, statements: readonly Statement[]): Promise<void> {
  if (statements.some((s) => s.text)) throw new Error("commitWithOthers: statements written as text are not grouped");
  let groups = groupsByPool.get(pool);
  if (groups === undefined) {
    groups = { waiting: [], scheduled: false, inFlight: 0, overdue: undefined };
    groupsByPool.set(pool, groups);
  }
  const g = groups;
  const promise = new Promise<void>((resolve, reject) => {
    g.waiting.push({ statements, bytes: bytesOf(statements), resolve, reject });
  });
  if (g.inFlight >= GROUPS_IN_FLIGHT) waitForSlot(pool, g);
  else if (!g.scheduled) {
    g.scheduled = true;
    setImmediate(() => {
      g.scheduled = false;
      sendGroups(pool, g, false);
    });
  }
  return promise;
}

/** Changes wait for a slot: at most GROUP_WAIT_MAX_MS, then they go anyway. */
function waitForSlot(pool: Pool, g: Groups): void {
  if (g.overdue !== undefined) return;
  g.overdue = setTimeout(() => {
    g.overdue = undefined;
    sendGroups(pool, g, true);
  }, GROUP_WAIT_MAX_MS);
  g.overdue.unref();
}

/** Sends what waits, a group at a time, while fewer than GROUPS_IN_FLIGHT are at the database (or all of it, when overdue). */
function sendGroups(pool: Pool, g: Groups, overdue: boolean): void {
  while ((overdue || g.inFlight < GROUPS_IN_FLIGHT) && g.waiting.length > 0) {
    let n = 0;
    let bytes = 0;
    for (const w of g.waiting) {
      if (n > 0 && (n >= GROUP_MAX_CHANGES || bytes + w.bytes > GROUP_MAX_BYTES)) break;
      n++;
      bytes += w.bytes;
    }
    const group = g.waiting.splice(0, n);
    g.inFlight++;
    let freed = false;
    const free = () => {
      if (freed) return;
      freed = true;
      g.inFlight--;
      sendGroups(pool, g, false);
    };
    commitGroup(pool, group, free)
      .catch((err: unknown) => {
        // Not reached by any known path; no caller is left without an answer if it is.
        for (const w of group) w.reject(err);
      })
      .finally(free);
  }
  if (g.waiting.length > 0) waitForSlot(pool, g);
  else if (g.overdue !== undefined) {
    clearTimeout(g.overdue);
    g.overdue = undefined;
  }
}

/**
 * Errors a group can meet because of one of its changes: each change committed on
 * its own then finds out whose it was. A deadlock or lock wait is about the rows
 * one change touches.
 */
const ONE_CHANGE_ERRORS = new Set([
  "ER_DUP_ENTRY",
  "ER_DATA_TOO_LONG",
  "ER_BAD_NULL_ERROR",
  "ER_WARN_DATA_OUT_OF_RANGE",
  "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD",
  "ER_TRUNCATED_WRONG_VALUE",
  "ER_CHECK_CONSTRAINT_VIOLATED",
  "ER_CONSTRAINT_FAILED",
  "ER_LOCK_DEADLOCK",
  "ER_LOCK_WAIT_TIMEOUT",
]);

const VALUES = /\sVALUES\s/;
/** What may follow VALUES in a statement marked rows: tuples only (no ON DUPLICATE KEY UPDATE, no SELECT, no second statement). */
const TUPLES = /^\([^;]*\)$/;

/**
 * A statement marked rows as the part before VALUES and its tuples, or undefined
 * when it is not one mergeRows may merge. Remembered by SQL text: a group's
 * statements are a few texts over and over (in createKey's profile the regular
 * expressions were most of mergeRows' 3% of keyhold's busy time).
 */
const splits = new Map<string, { head: string; tuples: string } | undefined>();
function rowsSplit(sql: string): { head: string; tuples: string } | undefined {
  if (splits.has(sql)) return splits.get(sql);
  const at = VALUES.exec(sql);
  const tuples = at === null ? "" : sql.slice(at.index + at[0].length);
  const split = at === null || !TUPLES.test(tuples) || /\bON\s+DUPLICATE\b/i.test(tuples) ? undefined : { head: sql.slice(0, at.index), tuples };
  // Texts made with a row count in them (an INSERT of n rows) are few; bounded all the same.
  if (splits.size >= 256) splits.clear();
  splits.set(sql, split);
  return split;
}

/**
 * A group's statements, with the INSERTs marked `rows` into the same table and
 * columns made one: each statement is also a packet the database parses and
 * answers, and mysql2 reads (a plain key's INSERT was one of its three).
 */
function mergeRows(statements: readonly Statement[]): Statement[] {
  const merged = new Map<string, { tuples: string[]; params: Param[] }>();
  const rest: Statement[] = [];
  for (const s of statements) {
    const split = s.rows === true ? rowsSplit(s.sql) : undefined;
    if (split === undefined) {
      rest.push(s);
      continue;
    }
    const { head, tuples } = split;
    let m = merged.get(head);
    if (m === undefined) merged.set(head, (m = { tuples: [], params: [] }));
    m.tuples.push(tuples);
    for (const p of s.params) m.params.push(p);
  }
  return [...Array.from(merged, ([head, m]) => ({ sql: `${head} VALUES ${m.tuples.join(", ")}`, params: m.params })), ...rest];
}

/** Commits a group; `answered` is called when the group's own round trip is over, before any change goes again on its own. */
async function commitGroup(pool: Pool, group: Waiting[], answered: () => void): Promise<void> {
  const alone = (w: Waiting) => commitInOneTrip(pool, w.statements).then(w.resolve, w.reject);
  if (group.length === 1) return alone(group[0] as Waiting);
  try {
    await commitInOneTrip(pool, mergeRows(group.flatMap((w) => w.statements)));
  } catch (err) {
    answered();
    const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
    if (typeof code !== "string" || !ONE_CHANGE_ERRORS.has(code)) {
      for (const w of group) w.reject(err);
      return;
    }
    // One after the other: a change waiting for a row lock also holds up, by InnoDB's
    // gap locks, inserts of other changes next to that row in an index (seen here: a
    // key beside a locked one timed out too when they were committed at once).
    for (const w of group) await alone(w);
    return;
  }
  for (const w of group) w.resolve();
}

export const isDuplicateKey = (err: unknown): boolean => (err as { code?: string }).code === "ER_DUP_ENTRY";

export const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));
export const optNum = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : num(v));
export const optStr = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : String(v));

// A row lock still held when innodb_lock_wait_timeout runs out (set per session
// below the statement watchdog, see db.ts) and a deadlock that kept recurring are
// "busy, try again" too: 503, not 500.
const UNAVAILABLE = new Set([
  "ER_LOCK_WAIT_TIMEOUT",
  "ER_LOCK_DEADLOCK",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "PROTOCOL_CONNECTION_LOST",
  "ER_CON_COUNT_ERROR",
  "ER_SERVER_SHUTDOWN",
  "ENOTFOUND",
]);

/**
 * Whether an error means the database cannot be reached (a 503, not a bug). mysql2
 * marks every error that broke the connection itself as fatal, including a
 * statement sent on a connection that was already closed.
 */
export const isDatabaseUnavailable = (err: unknown): boolean =>
  typeof err === "object" && err !== null && (UNAVAILABLE.has(String((err as { code?: string }).code)) || (err as { fatal?: unknown }).fatal === true);

/** Rows grouped by the string value of one column, each row mapped by f. */
export function groupBy<T>(rs: readonly Row[], column: string, f: (r: Row) => T): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const r of rs) {
    const k = String(r[column]);
    let list = m.get(k);
    if (!list) m.set(k, (list = []));
    list.push(f(r));
  }
  return m;
}
