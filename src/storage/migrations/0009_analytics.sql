-- Analytics: one row per verification and per rate-limit check, written behind
-- in batches (src/domain/analytics/recorder.ts), and their roll-ups per minute,
-- hour, day and month, added to in the same transaction as the raw rows. Users
-- read them through analytics.getVerifications / getRatelimits, whose queries
-- are compiled (src/storage/analytics-sql/query.ts) into reads of these tables
-- filtered to the caller's workspace. Times are UTC. '' (never NULL) means
-- "none" for a key, key space, identity or external id: NOT_FOUND
-- verifications have no key, and the roll-ups' primary keys cannot hold NULLs.
-- Raw rows are clustered by workspace, key space (an API's) and time: the
-- queries of one workspace, one API, over a range are one range scan each.
CREATE TABLE IF NOT EXISTS analytics_verifications (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  request_id VARCHAR(64) NOT NULL,
  `time` DATETIME(3) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  key_space_id VARCHAR(48) NOT NULL,
  -- keyhold's own column: the API whose key space this is (one key space per API).
  api_id VARCHAR(48) NOT NULL,
  key_id VARCHAR(48) NOT NULL,
  identity_id VARCHAR(48) NOT NULL,
  external_id VARCHAR(256) NOT NULL,
  outcome VARCHAR(32) NOT NULL,
  region VARCHAR(64) NOT NULL,
  -- A JSON array of strings (the request's tags), '[]' for none.
  tags TEXT NOT NULL,
  spent_credits BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, key_space_id, `time`, pk),
  KEY analytics_verifications_pk (pk),
  KEY analytics_verifications_time (`time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The roll-ups: `time` is the bucket's start. tags_hash (MD5 of the tags text)
-- stands for the tags in the primary key, which could not hold the text itself.
CREATE TABLE IF NOT EXISTS analytics_verifications_per_minute (
  `time` DATETIME NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  key_space_id VARCHAR(48) NOT NULL,
  api_id VARCHAR(48) NOT NULL,
  key_id VARCHAR(48) NOT NULL,
  identity_id VARCHAR(48) NOT NULL,
  external_id VARCHAR(256) NOT NULL,
  outcome VARCHAR(32) NOT NULL,
  tags TEXT NOT NULL,
  tags_hash CHAR(32) NOT NULL,
  count BIGINT UNSIGNED NOT NULL,
  spent_credits BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, key_space_id, `time`, key_id, identity_id, outcome, tags_hash),
  KEY analytics_verifications_per_minute_time (`time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS analytics_verifications_per_hour LIKE analytics_verifications_per_minute;
CREATE TABLE IF NOT EXISTS analytics_verifications_per_day LIKE analytics_verifications_per_minute;
CREATE TABLE IF NOT EXISTS analytics_verifications_per_month LIKE analytics_verifications_per_minute;

CREATE TABLE IF NOT EXISTS analytics_ratelimits (
  pk BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  request_id VARCHAR(64) NOT NULL,
  `time` DATETIME(3) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  namespace_id VARCHAR(48) NOT NULL,
  identifier VARCHAR(512) NOT NULL,
  passed TINYINT(1) NOT NULL,
  PRIMARY KEY (workspace_id, namespace_id, `time`, pk),
  KEY analytics_ratelimits_pk (pk),
  KEY analytics_ratelimits_time (`time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- passed: checks that passed; total: all checks, in the bucket.
CREATE TABLE IF NOT EXISTS analytics_ratelimits_per_minute (
  `time` DATETIME NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  namespace_id VARCHAR(48) NOT NULL,
  identifier VARCHAR(512) NOT NULL,
  passed BIGINT UNSIGNED NOT NULL,
  total BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (workspace_id, namespace_id, `time`, identifier),
  KEY analytics_ratelimits_per_minute_time (`time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS analytics_ratelimits_per_hour LIKE analytics_ratelimits_per_minute;
CREATE TABLE IF NOT EXISTS analytics_ratelimits_per_day LIKE analytics_ratelimits_per_minute;
CREATE TABLE IF NOT EXISTS analytics_ratelimits_per_month LIKE analytics_ratelimits_per_minute;
