// Seeding for the keys.migrateKeys tests: a migration is made by the CLI
// (`keyhold migration create`), so the tests insert it through the repository.
import { createHash, randomBytes } from "node:crypto";
import bs58 from "bs58";
import { newId } from "../../../src/core/ids.js";
import { insertKeyMigration, type MigrationAlgorithm } from "../../../src/storage/key-migrations.js";
import type { Harness } from "../../harness.js";

/** A migration of this file's workspace (or of another workspace id), by its id. */
export async function seedMigration(h: Harness, algorithm: MigrationAlgorithm, workspaceId = h.workspaceId): Promise<string> {
  const id = newId("mig");
  await insertKeyMigration(h.db.pool, { id, workspaceId, algorithm, createdAt: Date.now() });
  return id;
}

/**
 * A key in github.com/seamapi/prefixed-api-key's format, `prefix_short_long`
 * (base58 tokens), with the hash that library stores: hex SHA-256 of the long token.
 */
export function seamapiKey(prefix: string): { key: string; short: string; long: string; importedHash: string } {
  const short = bs58.encode(randomBytes(6));
  const long = bs58.encode(randomBytes(18));
  return { key: `${prefix}_${short}_${long}`, short, long, importedHash: createHash("sha256").update(long).digest("hex") };
}
