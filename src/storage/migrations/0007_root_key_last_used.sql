-- When each root key last authenticated, written behind (approximate by design,
-- like keys.last_used_at_m). NULL: never used since this column exists.
ALTER TABLE root_keys ADD COLUMN last_used_at_m BIGINT NULL;
