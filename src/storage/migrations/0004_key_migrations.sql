-- Key migrations (CONTRACT §3.2.13): a workspace imports hashes of keys it issued
-- elsewhere. A migrated key carries the migration's id in pending_migration_id
-- until its first verification with that migrationId re-hashes it to our
-- standard hash; the index finds such a row by (hash, migration) quickly.
CREATE TABLE IF NOT EXISTS key_migrations (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  algorithm ENUM('sha256', 'github.com/seamapi/prefixed-api-key') NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY key_migrations_id (id),
  UNIQUE KEY key_migrations_workspace (id, workspace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The column and its index in one statement: a single ALTER takes effect whole
-- or not at all, so a run that stops anywhere in this file can simply be re-run
-- (CREATE TABLE IF NOT EXISTS above is safe to repeat).
ALTER TABLE `keys`
  ADD COLUMN pending_migration_id VARCHAR(48) NULL,
  ADD INDEX keys_pending_migration (pending_migration_id);
