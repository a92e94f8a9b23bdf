import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";

export type Queryable = Pool | PoolConnection;
export type Row = RowDataPacket & Record<string, unknown>;
type Param = string | number | bigint | boolean | null | Buffer;

/** Prepared-statement read. */
export async function rows<T = Row>(db: Queryable, sql: string, params: readonly Param[] = []): Promise<T[]> {
  const [r] = await db.execute<RowDataPacket[]>(sql, params as Param[]);
  return r as unknown as T[];
}

export async function one<T = Row>(db: Queryable, sql: string, params: readonly Param[] = []): Promise<T | undefined> {
  return (await rows<T>(db, sql, params))[0];
}

/** Prepared-statement write. */
export async function exec(db: Queryable, sql: string, params: readonly Param[] = []): Promise<ResultSetHeader> {
  const [r] = await db.execute<ResultSetHeader>(sql, params as Param[]);
  return r;
}

/** `?, ?, ?` for an IN list (callers never pass an empty list). */
export const placeholders = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

/** Runs fn in a transaction on one connection; rolls back on any error. */
export async function transaction<T>(pool: Pool, fn: (conn: PoolConnection) => Promise<T>): Promise<T> {
  const conn = await pool.getConnection();
  try {
    await conn.beginTransaction();
    const result = await fn(conn);
    await conn.commit();
    return result;
  } catch (err) {
    await conn.rollback().catch(() => undefined);
    throw err;
  } finally {
    conn.release();
  }
}

export const isDuplicateKey = (err: unknown): boolean => (err as { code?: string }).code === "ER_DUP_ENTRY";

export const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));
export const optNum = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : num(v));
export const optStr = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : String(v));
