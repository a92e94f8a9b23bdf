-- The analytics roll-ups without their `time` index (issue 14). Every roll-up row
-- was written to two B-trees, its primary key and (`time`, the primary key), and
-- a key seen once adds a row to each of the four roll-ups: on the miss path that
-- is eight index inserts a verification. Nothing reads through the index: the
-- analytics queries read the primary key by force (analytics-sql/query.ts), and
-- the usage charts (analytics-usage.ts) read each key space's range of the
-- primary key, the key spaces found by jumping from group to group. Measured on
-- MariaDB 10.11 with a 1 GB buffer pool: batches of 500 verifications of keys
-- seen once, written as the recorder writes them (raw rows and the four
-- roll-ups), 150,000 in all, the database's CPU a verification 59-68 µs with
-- the index, 41-50 µs without. The rate-limit roll-ups have the same shape. On
-- MariaDB 10.11 and MySQL 8 an index is dropped in place, without a copy.
ALTER TABLE analytics_verifications_per_minute DROP INDEX analytics_verifications_per_minute_time;
ALTER TABLE analytics_verifications_per_hour DROP INDEX analytics_verifications_per_minute_time;
ALTER TABLE analytics_verifications_per_day DROP INDEX analytics_verifications_per_minute_time;
ALTER TABLE analytics_verifications_per_month DROP INDEX analytics_verifications_per_minute_time;
ALTER TABLE analytics_ratelimits_per_minute DROP INDEX analytics_ratelimits_per_minute_time;
ALTER TABLE analytics_ratelimits_per_hour DROP INDEX analytics_ratelimits_per_minute_time;
ALTER TABLE analytics_ratelimits_per_day DROP INDEX analytics_ratelimits_per_minute_time;
ALTER TABLE analytics_ratelimits_per_month DROP INDEX analytics_ratelimits_per_minute_time;
