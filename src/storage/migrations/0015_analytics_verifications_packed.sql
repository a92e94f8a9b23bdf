-- A hot key's verifications, packed: the events of one batch that share every
-- column but their request id, time and spent credits (one tuple) are one row
-- here, their own values a JSON array of [request id, ms after `time`, spent
-- credits]. A row of analytics_verifications costs the database 3.3-4.3 µs of
-- CPU an event to insert (InnoDB's ha_write_row, the row's ~210 bytes); packed,
-- 0.25-0.42 µs and ~43 bytes (bench/README.md, 2026-12-01). Only tuples with
-- many events in a batch are packed (src/storage/analytics.ts, PACK_AT_LEAST);
-- the rest stay rows. Users never see this table: key_verifications_v1 reads
-- both (src/storage/analytics-sql/query.ts), and the retention sweep deletes a
-- pack once its last event is older than the cut.
--
-- An instance of an earlier version reads only rows: during a rolling upgrade,
-- its analytics answers miss the events packed by the upgraded instances until
-- it is upgraded too (nothing is lost; the roll-ups count every event).
CREATE TABLE IF NOT EXISTS analytics_verifications_packed (
  pk BIGINT UNSIGNED NOT NULL DEFAULT (UUID_SHORT()),
  -- The first event's time; last_time the last's: the pack's events lie between.
  `time` DATETIME(3) NOT NULL,
  last_time DATETIME(3) NOT NULL,
  workspace_id VARCHAR(48) NOT NULL,
  key_space_id VARCHAR(48) NOT NULL,
  api_id VARCHAR(48) NOT NULL,
  key_id VARCHAR(48) NOT NULL,
  identity_id VARCHAR(48) NOT NULL,
  external_id VARCHAR(256) NOT NULL,
  outcome VARCHAR(32) NOT NULL,
  region VARCHAR(64) NOT NULL,
  tags TEXT NOT NULL,
  -- How many events; events: [["req_…", 0, 1], ["req_…", 12, 0], …].
  n INT UNSIGNED NOT NULL,
  events LONGTEXT NOT NULL,
  -- By the last event's time: within a key space, a query's lower bound on
  -- time (the usual "since") and the retention sweep's cut are both a range
  -- of it (query.ts pushes a user's bounds on time down to last_time and `time`).
  PRIMARY KEY (workspace_id, key_space_id, last_time, pk)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
