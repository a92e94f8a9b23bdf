-- The audit log's resource index by record id (issue 14). audit_log_resources
-- named its record by audit_logs' AUTO_INCREMENT pk, which keyhold only learns
-- from the database: a group of records (many createKeys committed together,
-- src/storage/sql.ts) had to find theirs with a JOIN of a JSON_TABLE against
-- audit_logs' id index. Named by its id, which keyhold makes, an index row is a
-- plain VALUES tuple. Measured in SQL alone on MariaDB 10.11 (groups of 10
-- records of a key and its API): the database's CPU a record 81 µs with the
-- JSON_TABLE join, 68 with VALUES; with `bench:ab` (createKey, against the build
-- before): keys/s x1.052 and x1.067, the database's CPU a key x0.893 and x0.854.
--
-- Nothing is copied here: a copy of the whole index in one statement would hold
-- locks on audit_log_resources for as long as it ran (and be one writeset on
-- Galera) while instances of an earlier version, during a rolling upgrade, still
-- write it. This version reads both tables (src/storage/audit.ts, listAudit), and
-- every instance moves what it finds in the old one, in batches, with each audit
-- sweep (src/domain/audit/retention.ts), so it empties itself.
CREATE TABLE IF NOT EXISTS audit_resources (
  audit_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NULL,
  resource_id VARCHAR(256) NOT NULL,
  PRIMARY KEY (audit_id, resource_id),
  KEY audit_resources_lookup (workspace_id, resource_id, audit_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
