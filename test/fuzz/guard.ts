// What every fuzz case shares: the seed and run count, the operations (from the
// service descriptors, so a new RPC is fuzzed without touching this suite), a
// bounded wait, the stored-data check, and the failure report.

import type { DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import mysql from "mysql2/promise";
import type { Deps } from "../../src/domain/deps.js";
import { groupOf } from "../../src/gateway/plugin.js";
import { services } from "../../src/server/registry.js";
import type { Harness } from "../harness.js";

/** FUZZ_SEED (fixed in CI so a run is reproducible), FUZZ_RUNS per operation and transport, FUZZ_ONLY=op,op, FUZZ_PATH (fast-check replay path). */
export const settings = {
  seed: Number(process.env.FUZZ_SEED ?? 20_250_607),
  // 50: on a 2-core machine where the whole of `npm test` took 16.5 min, the two fuzz
  // files took 463 s of it at 200; at 120 they took 233 s of a 13.3 min vitest run
  // (2026-11-26, with the audit log's new operations), and at 80 CI as a whole
  // still took 19.1 min of its 20 on that machine. Deeper runs are `npm run fuzz` (5,000).
  runs: Number(process.env.FUZZ_RUNS ?? 50),
  only: process.env.FUZZ_ONLY?.split(",").filter((s) => s !== ""),
  path: process.env.FUZZ_PATH,
};

export interface Operation {
  /** `keys.createKey` */
  path: string;
  /** `/keyhold.v2.KeysService/CreateKey` */
  grpcPath: string;
  input: DescMessage;
}

/**
 * Every operation the front doors serve, from the registry's service descriptors.
 * The implementations are not called here, so no real dependencies are needed.
 */
export function allOperations(): Operation[] {
  return services({} as Deps).flatMap(({ service }) =>
    service.methods.map((m) => ({ path: `${groupOf(service)}.${m.localName}`, grpcPath: `/${service.typeName}/${m.name}`, input: m.input })),
  );
}

/** The operations to fuzz one by one: all of them, or those FUZZ_ONLY names. */
export const operations = (): Operation[] => allOperations().filter((o) => settings.only === undefined || settings.only.includes(o.path));

/** One seed per operation, derived from FUZZ_SEED, so operations do not share a sequence. */
export function seedFor(op: string): number {
  let h = settings.seed >>> 0;
  for (const c of op) h = Math.imul(h ^ c.charCodeAt(0), 16_777_619) >>> 0;
  return h | 0;
}

export const ANSWER_WITHIN_MS = 10_000;

/** Per operation: generous (a case takes milliseconds), yet a hang still ends the run. */
export const OPERATION_TIMEOUT_MS = 120_000 + settings.runs * 1_000;

/** The promise's value, or a failure when it does not settle in time (a hang). */
export async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ANSWER_WITHIN_MS / 1000} s`)), ANSWER_WITHIN_MS);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Statements that cannot change stored data; anything else counts as a write. */
const READ_ONLY = /^\s*(SELECT|SHOW|START TRANSACTION|BEGIN|COMMIT|ROLLBACK)\b/i;

type Method = (...args: unknown[]) => unknown;

/**
 * Detects changes to stored data made by a refused request. It watches every
 * statement the app's pool runs (pooled connections included). Before each
 * request it opens a consistent snapshot on its own connection; only when the
 * request was refused and ran a statement that may write does it compare a
 * digest of every row of every table as of the snapshot with one as of now.
 * Last-used times are written behind, so they are flushed inside the window.
 */
/** Append-only tables, and a column whose MAX, with COUNT(*), tells that rows were added (audit ids start with their time). */
const APPEND_ONLY: Record<string, string> = { audit_logs: "pk", audit_resources: "audit_id" };

export class DataGuard {
  private digestSql = "";
  private writes = 0;

  private constructor(
    private readonly h: Harness,
    private readonly conn: mysql.Connection,
  ) {}

  static async open(h: Harness): Promise<DataGuard> {
    const url = h.config.databaseUrl;
    if (url === undefined) throw new Error("the harness names its database in config.databaseUrl");
    const guard = new DataGuard(h, await mysql.createConnection(url));
    await guard.describeTables();
    guard.watch(h.db.pool as unknown as Record<string, Method>);
    const pool = h.db.pool as unknown as Record<string, Method>;
    const getConnection = pool.getConnection as Method;
    pool.getConnection = async (...args: unknown[]) => {
      const c = (await getConnection.apply(h.db.pool, args)) as Record<string, Method>;
      guard.watch(c);
      return c;
    };
    return guard;
  }

  /** Counts the statements of this pool or connection that may write. */
  private watch(target: Record<string, Method>): void {
    for (const name of ["query", "execute"]) {
      const original = target[name] as Method;
      target[name] = (...args: unknown[]) => {
        const sql = typeof args[0] === "string" ? args[0] : String((args[0] as { sql?: unknown })?.sql ?? "");
        if (!READ_ONLY.test(sql)) this.writes++;
        return original.apply(target, args);
      };
    }
  }

  close(): Promise<void> {
    return this.conn.end();
  }

  /**
   * One statement: per table, the row count and an order-independent digest of every column of every row
   * (but a root key's last use, written even for a refused request: the key did authenticate).
   */
  private async describeTables(): Promise<void> {
    const [rows] = await this.conn.query(
      "SELECT table_name AS t, GROUP_CONCAT(CONCAT('QUOTE(`', column_name, '`)') ORDER BY ordinal_position SEPARATOR ', ') AS cols FROM information_schema.columns WHERE table_schema = DATABASE() AND NOT (table_name = 'root_keys' AND column_name = 'last_used_at_m') GROUP BY table_name",
    );
    this.digestSql = (rows as Array<{ t: string; cols: string }>)
      .map(({ t, cols }) =>
        // The audit log only ever grows (the retention sweep does not run here), by
        // several rows per accepted change: its count and last key tell a record
        // written by a refused request, without hashing every record each time
        // (that doubled the fuzz files' time).
        APPEND_ONLY[t] !== undefined
          ? `SELECT '${t}' AS t, COUNT(*) AS n, COALESCE(MAX(${APPEND_ONLY[t]}), 0) AS d FROM \`${t}\``
          : `SELECT '${t}' AS t, COUNT(*) AS n, COALESCE(BIT_XOR(CONV(LEFT(MD5(CONCAT_WS(',', ${cols})), 16), 16, 10)), 0) AS d FROM \`${t}\``,
      )
      .join(" UNION ALL ");
  }

  private async digest(): Promise<Map<string, string>> {
    const [rows] = await this.conn.query(this.digestSql);
    return new Map((rows as Array<{ t: string; n: unknown; d: unknown }>).map((r) => [r.t, `${r.n}:${r.d}`]));
  }

  /**
   * Runs one request; `refused` tells whether its answer refused it. Returns the
   * answer and, for a refused request, the tables whose rows changed while it ran.
   */
  async run<T>(send: () => Promise<T>, refused: (result: T) => boolean): Promise<{ result: T; changed: string[] }> {
    await this.h.deps.usage.flush();
    await this.h.deps.analytics.flush();
    await this.h.deps.rootKeyUsage.flush();
    await this.conn.query("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    try {
      this.writes = 0;
      const result = await send();
      await this.h.deps.usage.flush();
      await this.h.deps.analytics.flush();
      await this.h.deps.rootKeyUsage.flush();
      if (this.writes === 0 || !refused(result)) return { result, changed: [] };
      const before = await this.digest();
      await this.conn.query("COMMIT");
      const after = await this.digest();
      return { result, changed: [...after.keys()].filter((t) => before.get(t) !== after.get(t)) };
    } finally {
      await this.conn.query("COMMIT");
    }
  }
}

export interface Tally {
  operations: number;
  tried: number;
  accepted: number;
  rejected: number;
}

export const summary = (suite: string, t: Tally): string =>
  `[fuzz ${suite}] seed ${settings.seed}: ${t.operations} operations x ${settings.runs} cases: ${t.tried} tried, ${t.accepted} accepted, ${t.rejected} rejected`;

/**
 * Runs an async property for one operation (or a named group of cases) and
 * fails with the seed, the operation and the shrunk case.
 */
export async function fuzz<T>(suite: string, name: string, arb: fc.Arbitrary<T>, check: (c: T) => Promise<void>, show: (c: T) => string): Promise<void> {
  const seed = seedFor(name);
  const out = await fc.check(fc.asyncProperty(arb, check), {
    seed,
    numRuns: settings.runs,
    ...(settings.path === undefined ? {} : { path: settings.path }),
  });
  if (!out.failed) return;
  const err = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
  const shown = out.counterexample === null ? "(none)" : show(out.counterexample[0]);
  throw new Error(
    [
      `${suite} fuzz failed for ${name} after ${out.numRuns} cases (${out.numShrinks} shrinks)`,
      `replay: FUZZ_SEED=${settings.seed} FUZZ_RUNS=${settings.runs} FUZZ_ONLY=${name} FUZZ_PATH=${out.counterexamplePath} (fast-check seed ${seed}; other operations skipped, so stored data may differ)`,
      `shrunk case: ${shown}`,
      `failure: ${err}`,
    ].join("\n"),
  );
}
