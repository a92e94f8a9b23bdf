-- The whole schema for the /v2 contract (CONTRACT §10), designed once. No foreign
-- keys, so it runs on Vitess-style sharded MySQL; utf8mb4_bin, so it runs on
-- MariaDB 10.11 and MySQL 8 alike and ids compare byte by byte. Times are Unix ms.
-- JSON documents are LONGTEXT: MySQL's JSON type would reorder object keys, and
-- the contract returns meta exactly as stored.

CREATE TABLE IF NOT EXISTS workspaces (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  name VARCHAR(256) NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY workspaces_id (id),
  UNIQUE KEY workspaces_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS root_keys (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  hash VARCHAR(64) NOT NULL,
  start VARCHAR(16) NOT NULL,
  name VARCHAR(256) NULL,
  permissions LONGTEXT NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  expires_at_m BIGINT NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY root_keys_id (id),
  UNIQUE KEY root_keys_hash (hash),
  KEY root_keys_workspace (workspace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS key_auth (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  store_encrypted_keys BOOLEAN NOT NULL DEFAULT TRUE,
  default_prefix VARCHAR(16) NULL,
  default_bytes INT NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY key_auth_id (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS apis (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  name VARCHAR(256) NOT NULL,
  key_auth_id VARCHAR(48) NOT NULL,
  delete_protection BOOLEAN NOT NULL DEFAULT FALSE,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY apis_id (id),
  UNIQUE KEY apis_key_auth (key_auth_id),
  KEY apis_workspace (workspace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS `keys` (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  key_auth_id VARCHAR(48) NOT NULL,
  api_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  hash VARCHAR(64) NOT NULL,
  start VARCHAR(64) NOT NULL,
  prefix VARCHAR(16) NULL,
  byte_length INT NOT NULL,
  name VARCHAR(256) NULL,
  identity_id VARCHAR(48) NULL,
  meta LONGTEXT NULL,
  expires_at_m BIGINT NULL,
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  remaining_requests BIGINT UNSIGNED NULL,
  refill_amount BIGINT UNSIGNED NULL,
  refill_day TINYINT UNSIGNED NULL,
  last_refill_at_m BIGINT NULL,
  last_used_at_m BIGINT NOT NULL DEFAULT 0,
  recoverable BOOLEAN NOT NULL DEFAULT FALSE,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY keys_id (id),
  UNIQUE KEY keys_hash (hash),
  KEY keys_listing (key_auth_id, deleted_at_m, id),
  KEY keys_identity (identity_id, key_auth_id, id),
  KEY keys_workspace (workspace_id),
  KEY keys_refill (refill_amount, deleted_at_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS encryption_keys (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  wrapped VARCHAR(512) NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY encryption_keys_id (id),
  UNIQUE KEY encryption_keys_workspace (workspace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS encrypted_keys (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  workspace_id VARCHAR(48) NOT NULL,
  key_id VARCHAR(48) NOT NULL,
  encrypted VARCHAR(1024) NOT NULL,
  encryption_key_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  UNIQUE KEY encrypted_keys_key (key_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- deleted is 0 for a live identity and the deletion time otherwise, so the unique
-- index keeps externalIds unique among live identities and frees them on delete.
CREATE TABLE IF NOT EXISTS identities (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  external_id VARCHAR(256) NOT NULL,
  meta LONGTEXT NULL,
  deleted BIGINT NOT NULL DEFAULT 0,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  UNIQUE KEY identities_id (id),
  UNIQUE KEY identities_external (workspace_id, external_id, deleted)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratelimits (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  name VARCHAR(256) NOT NULL,
  key_id VARCHAR(48) NULL,
  identity_id VARCHAR(48) NULL,
  `limit` BIGINT UNSIGNED NOT NULL,
  duration BIGINT UNSIGNED NOT NULL,
  auto_apply BOOLEAN NOT NULL DEFAULT TRUE,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  UNIQUE KEY ratelimits_id (id),
  UNIQUE KEY ratelimits_key_name (key_id, name),
  UNIQUE KEY ratelimits_identity_name (identity_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS permissions (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  name VARCHAR(512) NOT NULL,
  slug VARCHAR(128) NOT NULL,
  description VARCHAR(512) NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  UNIQUE KEY permissions_id (id),
  UNIQUE KEY permissions_slug (workspace_id, slug)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS roles (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  name VARCHAR(512) NOT NULL,
  description VARCHAR(512) NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  UNIQUE KEY roles_id (id),
  UNIQUE KEY roles_name (workspace_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS keys_permissions (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  key_id VARCHAR(48) NOT NULL,
  permission_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY keys_permissions_pair (key_id, permission_id),
  KEY keys_permissions_permission (permission_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS keys_roles (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  key_id VARCHAR(48) NOT NULL,
  role_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY keys_roles_pair (key_id, role_id),
  KEY keys_roles_role (role_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS roles_permissions (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  role_id VARCHAR(48) NOT NULL,
  permission_id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  created_at_m BIGINT NOT NULL,
  UNIQUE KEY roles_permissions_pair (role_id, permission_id),
  KEY roles_permissions_permission (permission_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratelimit_namespaces (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  name VARCHAR(512) NOT NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY ratelimit_namespaces_id (id),
  UNIQUE KEY ratelimit_namespaces_name (workspace_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratelimit_overrides (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(48) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  namespace_id VARCHAR(48) NOT NULL,
  identifier VARCHAR(512) NOT NULL,
  `limit` BIGINT UNSIGNED NOT NULL,
  duration BIGINT UNSIGNED NOT NULL,
  created_at_m BIGINT NOT NULL,
  updated_at_m BIGINT NULL,
  deleted_at_m BIGINT NULL,
  UNIQUE KEY ratelimit_overrides_id (id),
  UNIQUE KEY ratelimit_overrides_identifier (namespace_id, identifier)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every change that must reach other instances' caches (and the server's cache
-- when the CLI changes a root key) is recorded here; instances poll it.
CREATE TABLE IF NOT EXISTS cache_invalidations (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  kind VARCHAR(32) NOT NULL,
  cache_key VARCHAR(256) NOT NULL,
  created_at_m BIGINT NOT NULL,
  KEY cache_invalidations_created (created_at_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
