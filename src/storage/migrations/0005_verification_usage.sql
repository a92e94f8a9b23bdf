-- Verification counts for the dashboard's usage charts, added to by the usage
-- recorder behind the verify path: per workspace, API, key, minute
-- (bucket_start_m, unix ms) and outcome. Each verification of a key counts
-- twice: on the key's row and on its API's total (key_id = ''). NOT_FOUND
-- verifications have neither key nor API: they count on the workspace's row
-- (api_id = '', key_id = ''), so key_id = '' rows sum to the workspace's total.
-- The primary key serves "one API over time" as one range; the second index
-- "one key over time" and "the workspace over time" (key_id = ''); the third
-- the retention sweep (rows older than USAGE_RETENTION_DAYS are deleted).
CREATE TABLE IF NOT EXISTS verification_usage (
  workspace_id VARCHAR(48) NOT NULL,
  api_id VARCHAR(48) NOT NULL,
  key_id VARCHAR(48) NOT NULL,
  bucket_start_m BIGINT NOT NULL,
  outcome VARCHAR(32) NOT NULL,
  count BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (workspace_id, api_id, key_id, bucket_start_m, outcome),
  KEY verification_usage_key (workspace_id, key_id, bucket_start_m),
  KEY verification_usage_bucket (bucket_start_m)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
