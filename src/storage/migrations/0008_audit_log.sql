-- The audit log: one row per change, written in the change's own transaction
-- (src/domain/audit/audit.ts), so a change and its record commit together or not
-- at all. workspace_id is NULL for an operator's own events outside any workspace
-- (sign-ins). time_m and pk order the log newest first; pk breaks ties.
CREATE TABLE IF NOT EXISTS audit_logs (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NULL,
  time_m BIGINT NOT NULL,
  actor_type VARCHAR(16) NOT NULL,
  actor_id VARCHAR(64) NOT NULL,
  action VARCHAR(64) NOT NULL,
  -- [{"type": "key", "id": "key_..."}, ...]: every resource the change touched.
  resources LONGTEXT NOT NULL,
  description VARCHAR(1024) NOT NULL,
  request_id VARCHAR(64) NULL,
  remote_address VARCHAR(64) NULL,
  user_agent VARCHAR(256) NULL,
  UNIQUE KEY audit_logs_id (id),
  KEY audit_logs_workspace_time (workspace_id, time_m, pk),
  KEY audit_logs_workspace_actor (workspace_id, actor_id, time_m, pk),
  KEY audit_logs_time (time_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per resource of a record, for "everything that happened to key_x".
CREATE TABLE IF NOT EXISTS audit_log_resources (
  audit_pk BIGINT UNSIGNED NOT NULL,
  workspace_id VARCHAR(48) NULL,
  resource_id VARCHAR(256) NOT NULL,
  PRIMARY KEY (audit_pk, resource_id),
  KEY audit_log_resources_lookup (workspace_id, resource_id, audit_pk)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
