-- Responses of mutating requests sent with an Idempotency-Key header, kept for a
-- while (IDEMPOTENCY_TTL_MS) so that a retry gets the same answer instead of
-- running again. Records belong to the root key that made them. The client's key
-- is stored as its SHA-256; the request as the SHA-256 of its protobuf encoding;
-- the response (which may hold a new plaintext key) encrypted by the workspace's
-- data key, like recoverable keys. state: 0 = running (or interrupted), 1 = done.
CREATE TABLE IF NOT EXISTS idempotency_records (
  workspace_id VARCHAR(48) NOT NULL,
  root_key_id VARCHAR(48) NOT NULL,
  key_hash CHAR(64) NOT NULL,
  operation VARCHAR(128) NOT NULL,
  request_hash CHAR(64) NOT NULL,
  state TINYINT NOT NULL,
  response MEDIUMTEXT NULL,
  encryption_key_id VARCHAR(64) NULL,
  created_at_m BIGINT NOT NULL,
  expires_at_m BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, root_key_id, key_hash),
  KEY idempotency_records_expires (expires_at_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
