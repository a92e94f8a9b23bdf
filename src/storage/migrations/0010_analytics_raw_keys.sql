-- The raw analytics tables without secondary indexes (issue 14). Every verification
-- and rate-limit check is a raw row, and each index is written with it: measured
-- on MariaDB 10.11 (rows of a hot key, 220 a statement as under load), the
-- database spent 9.5-10.7 µs of CPU a row with the AUTO_INCREMENT `pk` (whose index
-- InnoDB requires) and the `time` index, 7.3-7.7 without them, as much as with
-- the primary key alone. `pk` is given by its default from 0011 on (UUID_SHORT()):
-- it only tells apart rows of one key space and millisecond. The
-- retention sweep finds old rows through the primary key, group by group
-- (src/domain/analytics/retention.ts), not through `time`. On MariaDB 10.11 both
-- changes are made in place (ALGORITHM=NOCOPY is accepted): the table is not copied.
ALTER TABLE analytics_verifications
  MODIFY pk BIGINT UNSIGNED NOT NULL,
  DROP INDEX analytics_verifications_pk,
  DROP INDEX analytics_verifications_time;

ALTER TABLE analytics_ratelimits
  MODIFY pk BIGINT UNSIGNED NOT NULL,
  DROP INDEX analytics_ratelimits_pk,
  DROP INDEX analytics_ratelimits_time;
