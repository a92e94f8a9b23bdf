import fs from "node:fs";
import type { Socket } from "node:net";
import path from "node:path";
import mysql, { type Pool, type PoolConnection, type PoolOptions } from "mysql2/promise";
import { migrationsDir } from "../paths.js";
import { isDatabaseUnavailable, retryingDeadlocks } from "./sql.js";

export type { Pool };

/** The mysql2 pool's own lists (not part of its typed API; read defensively). */
interface PoolInternals {
  pool?: { _allConnections?: { length: number }; _freeConnections?: { length: number }; _connectionQueue?: { length: number } };
}

/** The pool's connections: all open ones, the idle ones, and the requests waiting for one. */
export function poolFigures(pool: Pool): { open: number; idle: number; queued: number } {
  const lists = (pool as unknown as PoolInternals).pool;
  return { open: lists?._allConnections?.length ?? 0, idle: lists?._freeConnections?.length ?? 0, queued: lists?._connectionQueue?.length ?? 0 };
}

/** Answers once the database runs a trivial statement. */
export async function ping(pool: Pool): Promise<void> {
  await pool.query("SELECT 1");
}

export interface Database {
  pool: Pool;
  /** Where it lives, for logs (never with a password). */
  description: string;
  close(): Promise<void>;
}

export type Log = (line: string) => void;

export interface DatabaseTimeouts {
  /** Longest opening a connection may take. */
  connectTimeoutMs: number;
  /** Longest the server may stay silent on a statement before its connection is dropped. */
  queryTimeoutMs: number;
}

/** The defaults of DB_CONNECT_TIMEOUT_MS and DB_QUERY_TIMEOUT_MS, for callers without a Config. */
export const DEFAULT_TIMEOUTS: DatabaseTimeouts = { connectTimeoutMs: 5_000, queryTimeoutMs: 15_000 };

const DEFAULT_DB = "keyhold";

const common: Partial<PoolOptions> = {
  waitForConnections: true,
  connectionLimit: 20,
  maxIdle: 20,
  idleTimeout: 60_000,
  enableKeepAlive: true,
  // Bounds this pool's share of the server-wide max_prepared_stmt_count.
  maxPreparedStatements: 256,
  supportBigNumbers: true,
  bigNumberStrings: false,
  dateStrings: true,
  charset: "utf8mb4_bin",
  timezone: "Z",
  // No stack captured at every call to add the caller's frames to a failed
  // statement's error: that was ~5 µs of CPU per statement, 11% of a createKey's
  // CPU (profile, bench/README.md). Failures still carry their code and message,
  // and are logged with the operation and request id that ran them.
  trace: false,
  // sql.ts's commitInOneTrip sends a change's statements and its COMMIT as one
  // query (a plain createKey: one round trip instead of five). Safe here because
  // no value is ever put in SQL text: values go as placeholders, bound by the
  // server (execute) or escaped by mysql2 (query). SQL written by users (an
  // analytics query, say) must never run on these connections.
  multipleStatements: true,
};

function quoteIdent(name: string): string {
  if (!/^[A-Za-z0-9_$-]{1,64}$/.test(name)) throw new Error(`unsupported database name ${JSON.stringify(name)}`);
  return `\`${name}\``;
}

/**
 * Where the database is: a DATABASE_URL, or the unix socket of a server this
 * process runs (server/database.ts starts it), stopped when the database is closed.
 */
export type DatabaseTarget = string | { socketPath: string; description: string; stop(): Promise<void> };

/** A DATABASE_URL taken apart: one or more `host:port`, separated by commas, for the nodes of a cluster. */
export interface ParsedDatabaseUrl {
  hosts: Array<{ host: string; port: number }>;
  user: string;
  password: string;
  database: string;
  socketPath?: string;
}

/**
 * Parses `mysql://user:password@host1:3306,host2:3306/database?socketPath=…`.
 * WHATWG URLs take one host, so the host list is cut out first and each host is
 * parsed on its own. Throws on anything else.
 */
export function parseDatabaseUrl(url: string): ParsedDatabaseUrl {
  const m = /^(mysql|mariadb):\/\/(?:([^@/?#]*)@)?([^/?#]*)([/?#].*)?$/.exec(url);
  if (m === null) throw new Error("expected mysql://user:password@host:3306/database");
  const [, scheme, auth, hostList, rest = ""] = m;
  const hosts = (hostList ?? "").split(",").map((h) => {
    const u = new URL(`${scheme}://${h}`);
    if (h !== "" && u.hostname === "") throw new Error(`cannot read host ${JSON.stringify(h)}`);
    return { host: u.hostname.replace(/^\[(.*)\]$/, "$1") || "127.0.0.1", port: u.port ? Number(u.port) : 3306 };
  });
  const u = new URL(`${scheme}://${auth === undefined ? "" : `${auth}@`}placeholder${rest}`);
  const socketPath = u.searchParams.get("socketPath") ?? u.searchParams.get("socket") ?? undefined;
  return {
    hosts,
    user: decodeURIComponent(u.username) || "root",
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || DEFAULT_DB,
    ...(socketPath ? { socketPath } : {}),
  };
}

/** Connects to the target. Creates the database when missing. */
export async function openDatabase(target: DatabaseTarget, timeouts: DatabaseTimeouts = DEFAULT_TIMEOUTS, log: Log = () => undefined): Promise<Database> {
  let server: { stop(): Promise<void> } | undefined;
  let bases: PoolOptions[];
  let database: string;
  let description: string;
  if (typeof target === "string") {
    const p = parseDatabaseUrl(target);
    database = p.database;
    bases = p.hosts.map(({ host, port }) => ({ host, port, user: p.user, password: p.password, ...(p.socketPath ? { socketPath: p.socketPath } : {}) }));
    description = `mysql://${p.user}@${p.socketPath ?? p.hosts.map((h) => `${h.host}:${h.port}`).join(",")}/${database}`;
  } else {
    server = target;
    database = DEFAULT_DB;
    bases = [{ socketPath: target.socketPath, user: "root" }];
    description = `${target.description}/${database}`;
  }
  // Any node that answers creates the database (on a cluster it is replicated to the others).
  let created = false;
  let lastError: unknown;
  for (const base of bases) {
    try {
      const admin = await mysql.createConnection({ ...base, ...pick(common), connectTimeout: timeouts.connectTimeoutMs });
      try {
        await admin.query(`CREATE DATABASE IF NOT EXISTS ${quoteIdent(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
        created = true;
        break;
      } finally {
        await admin.end();
      }
    } catch (err) {
      lastError = err;
    }
  }
  if (!created) {
    await server?.stop();
    throw new Error(`cannot reach the database at ${description}: ${(lastError as Error).message}`);
  }
  // A statement waiting for a row lock fails as a lock wait (a 503) well before the
  // watchdog would take it for a silent database and drop the pool's connections.
  const lockWaitSeconds = Math.max(1, Math.floor(timeouts.queryTimeoutMs / 2_000));
  const pools = bases.map((base) => {
    const pool = mysql.createPool({ ...common, ...base, database, connectTimeout: timeouts.connectTimeoutMs });
    // Per node: a silent node's connections are dropped, not the other nodes'.
    const open = new Set<CoreConnection>();
    pool.on("connection", (conn) => {
      watch(conn as unknown as CoreConnection, open, timeouts.queryTimeoutMs);
      prepareSession(conn as unknown as SessionConnection, [ESCAPING_SAFE, `SET SESSION innodb_lock_wait_timeout = ${lockWaitSeconds}`]);
    });
    return pool;
  });
  const hostNames = bases.map((b) => b.socketPath ?? `${b.host}:${b.port}`);
  const pool = pools.length === 1 ? (pools[0] as Pool) : failoverPool(pools, hostNames, log);
  const analytics = analyticsPool({ ...common, ...(bases[0] as PoolOptions), database, connectTimeout: timeouts.connectTimeoutMs });
  readOnlyPools.set(pool, analytics);
  return {
    pool,
    description,
    async close() {
      await Promise.all([...pools, analytics].map((p) => p.end().catch(() => undefined)));
      await server?.stop();
    },
  };
}

const readOnlyPools = new WeakMap<Pool, Pool>();

/** The pool for users' analytics queries that goes with a pool openDatabase made. */
export function analyticsPoolOf(pool: Pool): Pool | undefined {
  return readOnlyPools.get(pool);
}

/**
 * Users' analytics queries (compiled by src/storage/analytics-sql/query.ts) run on
 * connections of their own: one statement per query (no multipleStatements,
 * whatever the compiler let through), sessions read-only and in UTC, DECIMAL
 * sums as numbers, and at most 4 at a time so they cannot take the pool the
 * API needs. On a cluster they go to the first node listed.
 */
function analyticsPool(options: PoolOptions): Pool {
  const pool = mysql.createPool({ ...options, multipleStatements: false, decimalNumbers: true, connectionLimit: 4, maxIdle: 4 });
  pool.on("connection", (conn) => {
    prepareSession(conn as unknown as SessionConnection, [ESCAPING_SAFE, "SET SESSION time_zone = '+00:00'", "SET SESSION TRANSACTION READ ONLY"]);
  });
  return pool;
}

export interface SessionConnection {
  query(sql: string, cb: (err: unknown) => void): void;
  destroy(): void;
}

/**
 * mysql2 escapes the values it puts in SQL text (every statement with more than a
 * few parameters, and each change sent in one round trip) with backslashes. A
 * server whose sql_mode has NO_BACKSLASH_ESCAPES would read `\'` as the end of
 * the string and the rest of the value as SQL, more statements included (these
 * connections accept several per query). Every session drops that mode first.
 */
export const ESCAPING_SAFE = "SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')";

/**
 * Queues a new connection's session settings ahead of its first statement. One
 * that fails closes the connection: used without its settings it could be
 * unsafe (ESCAPING_SAFE) or not read-only; the statement waiting on it fails
 * as a lost connection (a 503), never runs without them.
 */
export function prepareSession(conn: SessionConnection, statements: readonly string[]): void {
  for (const sql of statements)
    conn.query(sql, (err) => {
      if (err) conn.destroy();
    });
}

/** Errors that mean nothing reached the server: the statement can go to another node as it is. */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "ER_CON_COUNT_ERROR"]);
/** A Galera node out of the primary component refuses statements until it rejoins (ER_UNKNOWN_COM_ERROR: "WSREP has not yet prepared node"). */
const NODE_NOT_READY = 1047;

/**
 * One pool per node of a cluster, used one at a time: statements go to the
 * current node; when it cannot be reached (or is a Galera node out of the
 * primary component), the next node becomes the current one. A statement that
 * never reached the failed node is sent to the next node at once; one that may
 * have run there (the connection broke during it) fails as unavailable (a 503),
 * since running it again could apply it twice. The pool keeps mysql2's Pool
 * interface, so nothing above the storage layer knows about nodes.
 */
function failoverPool(pools: Pool[], hosts: string[], log: Log): Pool {
  let current = 0;
  const down = (err: unknown): boolean => isDatabaseUnavailable(err) || (err as { errno?: number }).errno === NODE_NOT_READY;
  const notSent = (err: unknown): boolean => NOT_SENT.has(String((err as { code?: string }).code)) || (err as { errno?: number }).errno === NODE_NOT_READY;
  const moveFrom = (i: number, err: unknown) => {
    if (current !== i) return;
    current = (i + 1) % pools.length;
    log(`database node ${hosts[i]} failed (${(err as Error).message}); using ${hosts[current]}`);
  };
  const call =
    (name: "query" | "execute" | "getConnection") =>
    async (...args: unknown[]): Promise<unknown> => {
      let lastErr: unknown;
      // Each node at most once for a statement that reached none of them.
      for (let tried = 0; tried < pools.length; tried++) {
        const i = current;
        try {
          return await (pools[i] as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name]?.(...args);
        } catch (err) {
          lastErr = err;
          if (!down(err)) throw err;
          moveFrom(i, err);
          if (!notSent(err)) throw err;
        }
      }
      throw lastErr;
    };
  const wrapped = { query: call("query"), execute: call("execute"), getConnection: call("getConnection") } as Record<string, unknown>;
  return new Proxy(pools[0] as Pool, {
    get(_target, prop) {
      if (typeof prop === "string" && prop in wrapped) return wrapped[prop];
      const p = pools[current] as Pool;
      const v = Reflect.get(p, prop, p);
      return typeof v === "function" ? v.bind(p) : v;
    },
  });
}

/** The parts of mysql2's connection (below the promise wrapper) the watchdog needs. */
interface CoreConnection {
  stream: Socket;
  /** The statement waiting for the server's answer, if any. */
  _command: unknown;
  /** Closes it and takes it out of its pool. */
  destroy(): void;
}

/** Connections whose statements may wait as long as they need (the migration lock). */
const unbounded = new WeakSet<object>();

/**
 * mysql2 has no deadline for a statement whose server went silent (a network
 * partition, a hung server): the request would wait for TCP to give up, many
 * minutes later, and the connection would stay in the pool. So a connection
 * whose statement sees no byte for `ms` is destroyed: the statement fails with
 * ETIMEDOUT (a 503), the pool forgets the connection and opens a fresh one.
 * An idle pooled connection may stay silent as long as it likes, but when one
 * statement times out the idle ones are dropped too: they most likely lead to
 * the same silent server, and each would cost a request a timeout after the
 * network heals.
 */
function watch(conn: CoreConnection, open: Set<CoreConnection>, ms: number): void {
  open.add(conn);
  conn.stream.once("close", () => open.delete(conn));
  conn.stream.setTimeout(ms);
  conn.stream.on("timeout", () => {
    if (!conn._command || unbounded.has(conn)) return;
    conn.stream.destroy(Object.assign(new Error(`the database did not answer within ${ms} ms`), { code: "ETIMEDOUT" }));
    for (const other of open) if (other !== conn && !other._command && !unbounded.has(other)) other.destroy();
  });
}

/** The mysql2 connection below a promise pool connection. */
const core = (conn: PoolConnection): object => (conn as unknown as { connection: object }).connection;

function pick(o: Partial<PoolOptions>): Partial<PoolOptions> {
  const { supportBigNumbers, bigNumberStrings, dateStrings, charset, timezone } = o;
  return { supportBigNumbers, bigNumberStrings, dateStrings, charset, timezone } as Partial<PoolOptions>;
}

/** MySQL errors a migration statement gives when what it makes is already there. */
const ALREADY_THERE: Record<number, string> = {
  1050: "table exists",
  1060: "column exists",
  1061: "index exists",
  1091: "already dropped",
  1826: "foreign key exists",
};

/** How long a migration lease lasts without being renewed, and how often its holder renews it. */
export const MIGRATION_LEASE = { ttlMs: 60_000, renewMs: 10_000, pollMs: 250, waitMs: 120_000 };

const MIGRATION_LOCK_TABLE =
  "CREATE TABLE IF NOT EXISTS schema_migration_lock (id TINYINT NOT NULL PRIMARY KEY, holder VARCHAR(64) NULL, expires_at_m BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
const NOW_M = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";

/**
 * Applies the versioned SQL files in src/storage/migrations in order, each once.
 *
 * One process migrates at a time, across every node of a multi-primary cluster
 * too: the lock is a lease row (`schema_migration_lock`), taken by a conditional
 * UPDATE. GET_LOCK() would lock one Galera node only; two UPDATEs of the same row
 * on two nodes cannot both commit (one fails certification, which reads as a
 * deadlock and means "not taken"). The holder renews the lease while it works;
 * one that dies loses it after MIGRATION_LEASE.ttlMs. A statement whose object is
 * already there (a migration that ran but was not recorded, as when its process
 * died in between) counts as applied.
 */
export async function migrate(pool: Pool, log: Log, lease = MIGRATION_LEASE): Promise<string[]> {
  const conn = await pool.getConnection();
  const applied: string[] = [];
  const holder = `${process.pid}-${Math.random().toString(36).slice(2, 12)}`;
  // Waiting for another process's migration, or a long ALTER, is not a hung database.
  unbounded.add(core(conn));
  let renewing: NodeJS.Timeout | undefined;
  let lost = false;
  try {
    // On a Galera node, reads wait until this node has applied what other nodes committed
    // (the other process's migrations and lease); elsewhere the variable does not exist.
    await conn.query("SET SESSION wsrep_sync_wait = 1").catch(() => undefined);
    await retryingDeadlocks(() => conn.query(MIGRATION_LOCK_TABLE));
    await retryingDeadlocks(() => conn.query("INSERT IGNORE INTO schema_migration_lock (id, holder, expires_at_m) VALUES (1, NULL, 0)"));
    const deadline = Date.now() + lease.waitMs;
    for (;;) {
      if (await takeLease(conn, holder, lease.ttlMs)) break;
      if (Date.now() > deadline) throw new Error("timed out waiting for the migration lock (table schema_migration_lock)");
      await new Promise((r) => setTimeout(r, lease.pollMs));
    }
    renewing = setInterval(() => {
      void pool
        .query(`UPDATE schema_migration_lock SET expires_at_m = ${NOW_M} + ? WHERE id = 1 AND holder = ?`, [lease.ttlMs, holder])
        .then(([r]) => {
          if ((r as { affectedRows: number }).affectedRows !== 1) lost = true;
        })
        .catch(() => undefined);
    }, lease.renewMs);
    try {
      await conn.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version VARCHAR(128) NOT NULL PRIMARY KEY, applied_at_m BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
      );
      const [rows] = await conn.query("SELECT version FROM schema_migrations");
      const done = new Set((rows as Array<{ version: string }>).map((r) => r.version));
      const files = fs
        .readdirSync(migrationsDir)
        .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
        .sort();
      for (const file of files) {
        const version = file.replace(/\.sql$/, "");
        if (done.has(version)) continue;
        if (lost) throw new Error("lost the migration lock (its lease ran out); another process may be migrating");
        log(`applying migration ${version}`);
        for (const statement of splitStatements(fs.readFileSync(path.join(migrationsDir, file), "utf8"))) {
          try {
            await conn.query(statement);
          } catch (err) {
            const already = ALREADY_THERE[(err as { errno?: number }).errno ?? 0];
            if (already === undefined) throw err;
            log(`migration ${version}: ${already}, taken as applied (${(err as Error).message})`);
          }
        }
        await conn.query("INSERT INTO schema_migrations (version, applied_at_m) VALUES (?, ?)", [version, Date.now()]);
        applied.push(version);
      }
    } finally {
      clearInterval(renewing);
      await conn.query("UPDATE schema_migration_lock SET holder = NULL, expires_at_m = 0 WHERE id = 1 AND holder = ?", [holder]).catch(() => undefined);
    }
  } finally {
    clearInterval(renewing);
    unbounded.delete(core(conn));
    conn.release();
  }
  return applied;
}

/** Takes the migration lease when it is free or ran out; false when another holds it (or took it in the same instant on another node). */
async function takeLease(conn: PoolConnection, holder: string, ttlMs: number): Promise<boolean> {
  try {
    const [r] = await conn.query(
      `UPDATE schema_migration_lock SET holder = ?, expires_at_m = ${NOW_M} + ? WHERE id = 1 AND (holder IS NULL OR expires_at_m < ${NOW_M})`,
      [holder, ttlMs],
    );
    return (r as { affectedRows: number }).affectedRows === 1;
  } catch (err) {
    if ((err as { code?: string }).code === "ER_LOCK_DEADLOCK") return false;
    throw err;
  }
}

/** Splits a migration file on `;` at line ends, dropping `--` comment lines. */
export function splitStatements(sql: string): string[] {
  return sql
    .split("\n")
    .filter((line) => !line.trim().startsWith("--"))
    .join("\n")
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
