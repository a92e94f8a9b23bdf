-- Operators of a keyhold deployment: people who sign in to the dashboard. A
-- password is stored only as a self-describing scrypt string
-- (`scrypt$N$r$p$salt$hash`); a session only as the SHA-256 of its token (the
-- token lives in the browser's cookie). An operator acts on the workspaces
-- linked to them in operator_workspaces.
CREATE TABLE IF NOT EXISTS operators (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  email VARCHAR(320) NOT NULL,
  password_hash VARCHAR(255) NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY operators_id (id),
  UNIQUE KEY operators_email (email)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS operator_workspaces (
  operator_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  PRIMARY KEY (operator_id, workspace_id),
  KEY operator_workspaces_workspace (workspace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS operator_sessions (
  id CHAR(64) NOT NULL PRIMARY KEY,
  operator_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  expires_at_m BIGINT NOT NULL,
  last_seen_at_m BIGINT NOT NULL,
  KEY operator_sessions_operator (operator_id),
  KEY operator_sessions_expires (expires_at_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
