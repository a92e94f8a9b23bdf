-- Which key-encryption key wrapped each data key: the first 8 bytes of its SHA-256,
-- in hex (never the key). NULL for rows wrapped before this was recorded; those
-- are opened by whichever configured key opens them, and `keyhold encryption-key
-- rotate` fills it in.
ALTER TABLE encryption_keys ADD COLUMN kek_id VARCHAR(32) NULL;
