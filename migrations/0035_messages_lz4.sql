-- The stored message's bodies compressed with lz4 where the server has it.
-- A row past 2 KB has its longest values compressed, with pglz by default:
-- the shipped templates render to about 1.6 KB and stay under it, but an
-- operator's own HTML (a branded layout is easily 10-50 KB) is compressed at
-- every first lease. lz4 does that in a fraction of pglz's time for about the
-- same size (20,000 rows of 2.9 KB of bodies inserted on a PostgreSQL 15:
-- 480 ms with pglz, 276 with lz4, 309 stored uncompressed at twice the
-- size). Rows stored before keep their pglz values (both read alike): only
-- new values use lz4, and nothing is rewritten.
--
-- lz4 needs PostgreSQL 14 or later built with it (Debian's, RDS's and most
-- packaged servers are): the server lists it among default_toast_compression's
-- values. Where it is not (the embedded server of `npm start` is built
-- without it), the columns keep the server's default.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    EXECUTE 'ALTER TABLE email_messages ALTER COLUMN html_body SET COMPRESSION lz4, ALTER COLUMN text_body SET COMPRESSION lz4';
  END IF;
END
$$;
