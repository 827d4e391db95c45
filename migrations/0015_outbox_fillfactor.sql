-- Room on each outbox page for a lease to be a HOT update. A lease writes
-- only columns no index covers (lease_token, lease_expires_at, attempts,
-- lease_expirations, outcome_unknown_seen; available_at stays as it was),
-- so with free space on the row's page PostgreSQL keeps the new version on
-- the same page and writes no index entry: the outbox has six indexes, so a
-- non-HOT lease cost six index insertions per intent. Applies to pages
-- written from now on; `VACUUM FULL email_outbox` rewrites the old ones.
ALTER TABLE email_outbox SET (fillfactor = 80);
