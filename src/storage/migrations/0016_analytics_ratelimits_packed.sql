-- A hot identifier's rate-limit checks, packed as a hot key's verifications are
-- (0015): the checks of one batch of one (namespace, identifier) are one row,
-- their own values a JSON array of [request id, ms after `time`, passed (0 or
-- 1)]. Users read them through ratelimits_v1 with the rows
-- (src/storage/analytics-sql/query.ts); the retention sweep deletes a pack once
-- its last check is older than the cut. The rolling-upgrade caveat of 0015
-- applies here too.
CREATE TABLE IF NOT EXISTS analytics_ratelimits_packed (
  pk BIGINT UNSIGNED NOT NULL DEFAULT (UUID_SHORT()),
  `time` DATETIME(3) NOT NULL,
  last_time DATETIME(3) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  namespace_id VARCHAR(48) NOT NULL,
  identifier VARCHAR(512) NOT NULL,
  n INT UNSIGNED NOT NULL,
  events LONGTEXT NOT NULL,
  PRIMARY KEY (workspace_id, namespace_id, last_time, pk)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
