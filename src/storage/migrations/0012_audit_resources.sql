-- The audit log's resource index by record id (issue 14). audit_log_resources
-- named its record by audit_logs' AUTO_INCREMENT pk, which keyhold only learns
-- from the database: a group of records (many createKeys committed together,
-- src/storage/sql.ts) had to find theirs with a JOIN of a JSON_TABLE against
-- audit_logs' id index. Named by its id, which keyhold makes, an index row is a
-- plain VALUES tuple. Measured in SQL alone on MariaDB 10.11 (groups of 10
-- records of a key and its API): the database's CPU a record 81 µs with the
-- JSON_TABLE join, 68 with VALUES; with `bench:ab` (createKey, against the build
-- before): keys/s x1.039 and x1.119, the database's CPU a key x0.899 and x0.800.
--
-- The rows already indexed are copied here. audit_log_resources stays while
-- instances of an earlier version may still write it (a rolling upgrade): every
-- instance moves what it finds there into this table with each audit sweep
-- (src/domain/audit/retention.ts), so it empties itself.
CREATE TABLE IF NOT EXISTS audit_resources (
  audit_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NULL,
  resource_id VARCHAR(256) NOT NULL,
  PRIMARY KEY (audit_id, resource_id),
  KEY audit_resources_lookup (workspace_id, resource_id, audit_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO audit_resources (audit_id, workspace_id, resource_id)
  SELECT a.id, r.workspace_id, r.resource_id FROM audit_log_resources r JOIN audit_logs a ON a.pk = r.audit_pk;
