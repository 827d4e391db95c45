-- Who holds each lease: the delivery worker's id, whose session advisory
-- lock (src/db/presence.ts) shows whether that worker is still alive. A
-- lease whose owner's lock is free is reclaimed at once rather than after
-- the lease expires (tables/outbox.ts intentsReclaimGone). NULL: a lease
-- taken without a presence (no session connection, an older leasehold);
-- it is reclaimed only by expiring, as before.
--
-- The owner is kept on the attempt the lease opened rather than on
-- email_outbox: a lease then still writes only unindexed outbox columns (a
-- HOT update, migration 0015), and the open attempts, the only ones a
-- reclaim looks at, have an index of their own that stays as small as the
-- sends in flight.
ALTER TABLE email_attempts ADD COLUMN worker integer;

CREATE INDEX email_attempts_open_by_worker ON email_attempts (worker)
  WHERE finished_at IS NULL AND worker IS NOT NULL;
