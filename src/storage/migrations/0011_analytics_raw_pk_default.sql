-- The raw analytics tables' `pk` from the database again, as a default:
-- UUID_SHORT() (MariaDB; MySQL takes expression defaults from 8.0.13). Since 0010
-- it has no AUTO_INCREMENT (whose index cost the database ~1-2 µs of CPU a
-- row). A default rather than a number made by keyhold: an instance of an
-- earlier version, still running while the others are upgraded, writes its rows
-- without `pk` and keeps working; and there is nothing to send. Rows of a hot
-- key, 220 a statement, measured on MariaDB 10.11: 7.7-8.1 µs of the database's
-- CPU a row, against 7.9-8.6 with `pk` sent by the client, in the same run.
--
-- `pk` only tells apart rows of one workspace, key space (or namespace) and
-- millisecond, the rest of the primary key. UUID_SHORT() is unique on a server
-- (its id, its start-up time, a counter); on a cluster whose nodes share a
-- server id, two nodes would have to start in the same second and reach the
-- same count in the same key space and millisecond to collide, and the
-- database would then refuse that batch (a duplicate key), which the analytics
-- recorder sends again later (new defaults then). In place on MariaDB 10.11.
ALTER TABLE analytics_verifications MODIFY pk BIGINT UNSIGNED NOT NULL DEFAULT (UUID_SHORT());

ALTER TABLE analytics_ratelimits MODIFY pk BIGINT UNSIGNED NOT NULL DEFAULT (UUID_SHORT());
