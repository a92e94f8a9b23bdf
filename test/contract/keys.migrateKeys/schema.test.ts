// The schema keys.migrateKeys needs (migration 0004) can be applied again after
// a run that stopped part way through it: each statement takes effect whole, and
// re-running the file over any prefix of it finishes the job.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrationsDir } from "../../../src/paths.js";
import { migrate, splitStatements } from "../../../src/storage/db.js";
import { useHarness } from "../../harness.js";

const VERSION = "0004_key_migrations";

describe("migration 0004 (key migrations)", () => {
  const h = useHarness();

  const count = async (sql: string, params: unknown[] = []) => {
    const [rows] = await h.db.pool.query(sql, params);
    return Number((rows as Array<{ n: number }>)[0]?.n);
  };

  it("re-runs cleanly after stopping after any of its statements", async () => {
    const statements = splitStatements(fs.readFileSync(path.join(migrationsDir, `${VERSION}.sql`), "utf8"));
    for (let done = 0; done < statements.length; done++) {
      // Back to the schema before 0004 (dropping the column drops its index)...
      await h.db.pool.query("ALTER TABLE `keys` DROP COLUMN pending_migration_id");
      await h.db.pool.query("DROP TABLE key_migrations");
      await h.db.pool.query("DELETE FROM schema_migrations WHERE version = ?", [VERSION]);
      // ...then a run that stopped after `done` statements, then the next start's run.
      for (const s of statements.slice(0, done)) await h.db.pool.query(s);
      await expect(
        migrate(h.db.pool, () => undefined),
        `after ${done} statement(s)`,
      ).resolves.toContain(VERSION);

      expect(
        await count(
          "SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'keys' AND column_name = 'pending_migration_id'",
        ),
      ).toBe(1);
      expect(
        await count(
          "SELECT COUNT(*) AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'keys' AND index_name = 'keys_pending_migration'",
        ),
      ).toBe(1);
      expect(await count("SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'key_migrations'")).toBe(1);
    }
  });
});
