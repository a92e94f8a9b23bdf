// Migrations run once however many processes start at the same moment (on a
// multi-primary cluster the lock must be a row, not GET_LOCK, which locks one
// node only), survive a process that died between a statement and its record,
// and wait for a lease that is held, taking it over once it runs out.
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { type Database, MIGRATION_LEASE, migrate, openDatabase } from "../../src/storage/db.js";

const dbs: Database[] = [];
let names: string[] = [];

async function fresh(): Promise<{ url: string; open: () => Promise<Database> }> {
  const name = `keyhold_m_${randomBytes(5).toString("hex")}`;
  names.push(name);
  const u = new URL(inject("mysqlServer"));
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    url,
    open: async () => {
      const db = await openDatabase(url);
      dbs.push(db);
      return db;
    },
  };
}

afterEach(async () => {
  const first = dbs[0];
  for (const name of names) await first?.pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
  for (const db of dbs.splice(0)) await db.close();
  names = [];
});

const versions = async (db: Database) =>
  ((await db.pool.query("SELECT version FROM schema_migrations ORDER BY version"))[0] as Array<{ version: string }>).map((r) => r.version);

describe("migrate", () => {
  it("four processes starting at once on a fresh database: every migration applied once, none fails", async () => {
    const d = await fresh();
    const pools = await Promise.all(Array.from({ length: 4 }, () => d.open()));
    const results = await Promise.all(pools.map((db) => migrate(db.pool, () => undefined, { ...MIGRATION_LEASE, pollMs: 20 })));
    const all = results.flat();
    expect(all.length).toBeGreaterThan(5);
    // Each version applied by exactly one of them.
    expect(new Set(all).size).toBe(all.length);
    expect(await versions(pools[0] as Database)).toEqual([...all].sort());
    // And the lease is free again.
    const [lock] = (await (pools[0] as Database).pool.query("SELECT holder FROM schema_migration_lock WHERE id = 1"))[0] as Array<{ holder: null }>;
    expect(lock?.holder).toBeNull();
  });

  it("a migration that ran but was not recorded (its process died in between) is taken as applied", async () => {
    const d = await fresh();
    const db = await d.open();
    const applied = await migrate(db.pool, () => undefined);
    // As if two migrations' statements ran and the process died before recording
    // them: 0007, whose ALTER TABLE fails when run again (the error is what is taken
    // as applied), and the last one (its CREATE ... IF NOT EXISTS run again quietly).
    const lost = ["0007_root_key_last_used", applied[applied.length - 1] as string];
    expect(applied).toContain(lost[0]);
    await db.pool.query(`DELETE FROM schema_migrations WHERE version IN (?, ?)`, lost);
    const lines: string[] = [];
    expect(await migrate(db.pool, (l) => lines.push(l))).toEqual(lost);
    expect(lines.some((l) => /0007_root_key_last_used: .*taken as applied/.test(l))).toBe(true);
    expect(await versions(db)).toEqual(applied);
  });

  it("waits while another process holds the lease, and takes it over when the holder stops renewing it", async () => {
    const d = await fresh();
    const db = await d.open();
    await migrate(db.pool, () => undefined);
    await db.pool.query("DELETE FROM schema_migrations ORDER BY version DESC LIMIT 1");
    // Held by a process that died 0.8 s before its lease runs out.
    await db.pool.query("UPDATE schema_migration_lock SET holder = 'dead', expires_at_m = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 800 WHERE id = 1");
    const started = Date.now();
    const applied = await migrate(db.pool, () => undefined, { ...MIGRATION_LEASE, pollMs: 50 });
    expect(applied).toHaveLength(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
  });

  it("gives up with a clear error when the lease stays held past the wait", async () => {
    const d = await fresh();
    const db = await d.open();
    await migrate(db.pool, () => undefined);
    await db.pool.query("UPDATE schema_migration_lock SET holder = 'busy', expires_at_m = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 60000 WHERE id = 1");
    await expect(migrate(db.pool, () => undefined, { ...MIGRATION_LEASE, pollMs: 50, waitMs: 300 })).rejects.toThrow(/migration lock/);
  });
});
