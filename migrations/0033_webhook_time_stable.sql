-- webhook_time_ formats with to_char, which PostgreSQL marks STABLE (some of
-- its patterns read the session's locale), so declaring the wrapper
-- IMMUTABLE was a promise it could not keep: an IMMUTABLE function may be
-- folded into a plan or an index expression, and a SQL function declared
-- less volatile than its body is never inlined. STABLE is what it is; the
-- webhook triggers then inline it into their payload queries.
ALTER FUNCTION webhook_time_(timestamptz) STABLE;
