-- Keys' last use in a narrow table of its own (issue 14). The write-behind
-- (storage/keys.ts, touchKeys) updated keys.last_used_at_m: on the miss path,
-- where every verification is of a different key, that is one wide row a
-- verification found through the id index and changed in place, and one more
-- dirty page of the key table to be flushed. Measured with touchKeys itself,
-- the version before and this one alternated, on MariaDB 10.11 (1,000,000
-- keys, all in the buffer pool; flushes of 5,000 random keys a second, as at
-- 5,000 cold verifications a second; 12 each): the statements 29.7 -> 10.7 µs
-- a key, the database's CPU over the flush and the second after it 26.0 ->
-- 10.0 µs a key (medians).
--
-- Nothing is copied: reads take the greater of keys.last_used_at_m (written
-- before this version, and by instances of an earlier version during a rolling
-- upgrade) and this table's value. A key deleted for good loses its row here
-- with it (key-admin.ts); a flush racing that deletion can leave a row of a
-- key that is gone, which nothing reads.
CREATE TABLE IF NOT EXISTS keys_last_used (
  key_id VARCHAR(48) NOT NULL PRIMARY KEY,
  last_used_at_m BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
