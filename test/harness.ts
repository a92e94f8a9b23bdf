// Shared test set-up: a fresh database per test file (built by the production
// migrations), the real server (JSON via Fastify's inject, gRPC on a free port),
// and seed helpers. No mocks: everything runs against the real database server.
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, inject } from "vitest";
import { newId } from "../src/core/ids.js";
import { generateRootKey } from "../src/domain/auth/root-key.js";
import type { Deps } from "../src/domain/deps.js";
import { hashKey } from "../src/domain/keys/generate.js";
import { type GrpcServer, startGrpcServer } from "../src/grpc/server.js";
import { buildServer } from "../src/server/bootstrap.js";
import { type Config, loadConfig } from "../src/server/config.js";
import { openConfiguredDatabase } from "../src/server/database.js";
import { buildDeps, type Runtime } from "../src/server/deps.js";
import { services } from "../src/server/registry.js";
import { type Database, migrate, openDatabase } from "../src/storage/db.js";
import { insertRootKey } from "../src/storage/root-keys.js";
import { ensureWorkspace } from "../src/storage/workspaces.js";

export const DOCS = "https://docs.test.keyhold";

export interface Res {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
  body: any;
  text: string;
}

export interface Harness {
  app: FastifyInstance;
  deps: Deps;
  db: Database;
  runtime: Runtime;
  config: Config;
  workspaceId: string;
  docsBase: string;
  /** POST a JSON body (or raw string) with an optional root key. */
  post(path: string, body: unknown, rootKey?: string, headers?: Record<string, string>): Promise<Res>;
  /** A root key with exactly these permissions, in this file's workspace (or another). */
  rootKey(permissions: string[], workspace?: string): Promise<string>;
  /** Starts the gRPC server on a free port (once) and returns the port. */
  grpcPort(): Promise<number>;
  /** Counts the SQL statements the pool runs while fn runs. */
  countQueries(fn: () => Promise<void>): Promise<number>;
  /**
   * Another keyhold instance on the same database: its own pool, caches, limiter
   * and invalidation poller, as a second process behind a load balancer would have.
   * Closed with the harness.
   */
  otherInstance(env?: Record<string, string>): Promise<Instance>;
}

export interface Instance {
  app: FastifyInstance;
  deps: Deps;
  runtime: Runtime;
  post(path: string, body: unknown, rootKey?: string): Promise<Res>;
}

/** The statements the write-behind timers send (touchKeys, touchRootKeys, the analytics recorder's one round trip). */
const WRITE_BEHIND =
  /^(INSERT INTO keys_last_used |UPDATE root_keys SET last_used_at_m = |START TRANSACTION;\n(INSERT INTO |LOAD DATA LOCAL INFILE ')analytics_)/;

export function useHarness(): Harness {
  const h = {} as Harness;
  let dbName = "";
  let grpc: GrpcServer | undefined;
  let queries = 0;
  let counting = false;

  beforeAll(async () => {
    const server = inject("mysqlServer");
    dbName = `keyhold_t_${randomBytes(5).toString("hex")}`;
    const u = new URL(server);
    u.pathname = `/${dbName}`;
    const config = { ...loadConfig({ LOG_LEVEL: "silent", DOCS_BASE_URL: DOCS }), databaseUrl: u.toString() };
    const log = () => undefined;
    const db = await openConfiguredDatabase(config.databaseUrl, log);
    await migrate(db.pool, log);
    // Count statements for the cache tests: those a request makes, not the
    // write-behind timers' batched writes (last-used times, usage counts), which
    // may fire inside any counted window.
    const writtenBehind = (sql: unknown): boolean => typeof sql === "string" && WRITE_BEHIND.test(sql);
    const origExecute = db.pool.execute.bind(db.pool);
    const origQuery = db.pool.query.bind(db.pool);
    const origGet = db.pool.getConnection.bind(db.pool);
    (db.pool as { execute: unknown }).execute = (...args: unknown[]) => {
      if (counting && !writtenBehind(args[0])) queries++;
      return (origExecute as (...a: unknown[]) => unknown)(...args);
    };
    (db.pool as { query: unknown }).query = (...args: unknown[]) => {
      if (counting && !writtenBehind(args[0])) queries++;
      return (origQuery as (...a: unknown[]) => unknown)(...args);
    };
    (db.pool as { getConnection: unknown }).getConnection = async () => {
      if (counting) queries++;
      return origGet();
    };
    const runtime = buildDeps(config, db.pool, { info() {}, warn() {}, error() {}, debug() {} });
    const app = await buildServer({ config, deps: runtime.deps, services: services(runtime.deps) });
    await app.ready();
    const ws = await ensureWorkspace(db.pool, `test_${dbName}`, Date.now());
    Object.assign(h, { app, deps: runtime.deps, db, runtime, config, workspaceId: ws.id, docsBase: DOCS });
  });

  const others: Array<{ db: Database; runtime: Runtime; app: FastifyInstance; analyticsDb?: Database | undefined }> = [];

  afterAll(async () => {
    for (const o of others) {
      o.runtime.invalidations.stop();
      await o.app.close();
      await o.runtime.close();
      await o.analyticsDb?.close();
      await o.db.close();
    }
    await grpc?.close(1000);
    await h.app?.close();
    await h.runtime?.close();
    if (h.db) {
      await h.db.pool.query(`DROP DATABASE IF EXISTS \`${dbName}\``).catch(() => undefined);
      await h.db.close();
    }
  });

  h.post = async (path, body, rootKey, headers = {}) => {
    const res = await h.app.inject({
      method: "POST",
      url: path,
      headers: {
        "content-type": "application/json",
        ...(rootKey === undefined ? {} : { authorization: `Bearer ${rootKey}` }),
        ...headers,
      },
      payload: typeof body === "string" ? body : JSON.stringify(body),
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body: parsed, text: res.body };
  };

  h.rootKey = async (permissions, workspace) => {
    const now = Date.now();
    const wsId = workspace === undefined ? h.workspaceId : (await ensureWorkspace(h.db.pool, workspace, now)).id;
    const key = generateRootKey();
    await insertRootKey(h.db.pool, { id: newId("key", now), workspaceId: wsId, hash: hashKey(key), start: key.slice(0, 8), name: null, permissions, now });
    return key;
  };

  h.grpcPort = async () => {
    if (!grpc)
      grpc = await startGrpcServer(h.deps, services(h.deps), {
        docsBase: DOCS,
        host: "127.0.0.1",
        port: 0,
        bodyLimitBytes: h.config.bodyLimitBytes,
        reflection: h.config.grpcReflection,
      });
    return grpc.port;
  };

  h.otherInstance = async (env = {}) => {
    const config = { ...loadConfig({ LOG_LEVEL: "silent", DOCS_BASE_URL: DOCS, ...env }), databaseUrl: h.config.databaseUrl };
    const db = await openConfiguredDatabase(config.databaseUrl, () => undefined);
    // As main.ts: ANALYTICS_DATABASE_URL's database, migrated, for the analytics events.
    const analyticsDb = config.analyticsDatabaseUrl === undefined ? undefined : await openDatabase(config.analyticsDatabaseUrl);
    if (analyticsDb !== undefined) await migrate(analyticsDb.pool, () => undefined);
    const runtime = buildDeps(config, db.pool, { info() {}, warn() {}, error() {}, debug() {} }, undefined, analyticsDb?.pool);
    const app = await buildServer({ config, deps: runtime.deps, services: services(runtime.deps) });
    await app.ready();
    others.push({ db, runtime, app, analyticsDb });
    const post = async (path: string, body: unknown, rootKey?: string): Promise<Res> => {
      const res = await app.inject({
        method: "POST",
        url: path,
        headers: { "content-type": "application/json", ...(rootKey === undefined ? {} : { authorization: `Bearer ${rootKey}` }) },
        payload: JSON.stringify(body),
      });
      let parsed: unknown;
      try {
        parsed = JSON.parse(res.body);
      } catch {
        parsed = undefined;
      }
      return { status: res.statusCode, headers: res.headers, body: parsed, text: res.body };
    };
    return { app, deps: runtime.deps, runtime, post };
  };

  h.countQueries = async (fn) => {
    // The analytics write-behind checks out a connection for its transaction (a
    // checkout the filter below cannot tell from the request's own): its timer
    // is stopped while counting, and what it holds is written first.
    await h.deps.analytics.stop();
    queries = 0;
    counting = true;
    try {
      await fn();
    } finally {
      counting = false;
      h.deps.analytics.start();
    }
    return queries;
  };

  return h;
}

/** mysql2 is imported for its types in helpers that open side connections. */
export type { mysql };
