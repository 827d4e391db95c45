-- Retention (issue 13): finished stories (a terminal hold, its intent, the
-- intent's attempts) are deleted after LEASEHOLD_RETENTION_DAYS, and the
-- personal data in them can be erased earlier while the timeline stays.
-- Policy and statements: src/retention/.

-- Erasure sets an address to NULL rather than to a marker string: NULL can
-- never be mistaken for an address or sent to, and the CHECKs below let the
-- database refuse an erased row where a live one is needed.
ALTER TABLE support_reservations ALTER COLUMN customer_email DROP NOT NULL;
ALTER TABLE support_reservations ADD COLUMN erased_at timestamptz;
-- Only a terminal hold is ever erased (a held hold still has an email to
-- send), and erased_at says when. NOT VALID skips a scan of the whole table:
-- every existing row has an address and no erased_at, so it already holds;
-- new and updated rows are checked as usual.
ALTER TABLE support_reservations ADD CONSTRAINT support_reservations_erasure CHECK (
  (erased_at IS NULL AND customer_email IS NOT NULL) OR
  (erased_at IS NOT NULL AND customer_email IS NULL AND status <> 'held')
) NOT VALID;

ALTER TABLE email_outbox ALTER COLUMN recipient DROP NOT NULL;
-- A pending intent is going to be sent: it must have a recipient. So the
-- delivery lane never leases an erased intent, and replay cannot revive one.
ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_recipient_unless_finished
  CHECK (recipient IS NOT NULL OR state <> 'pending') NOT VALID;

-- A hold's end (exactly one of these is set once it left 'held'; see
-- support_reservations_terminal_timestamps) orders both passes. Partial, so
-- live holds never enter them and the expiry lane's indexes are unchanged.
-- Prune walks terminal holds oldest first:
CREATE INDEX IF NOT EXISTS support_reservations_finished
  ON support_reservations ((coalesce(confirmed_at, cancelled_at, expired_at)))
  WHERE status <> 'held';
-- Erasure walks terminal holds not yet erased; an erased hold leaves this
-- index, so the pass never re-reads the weeks of erased rows behind it.
-- (customer_email IS NOT NULL means "not erased" by the CHECK above, and
-- names only columns that exist before this migration.)
CREATE INDEX IF NOT EXISTS support_reservations_unerased
  ON support_reservations ((coalesce(confirmed_at, cancelled_at, expired_at)))
  WHERE status <> 'held' AND customer_email IS NOT NULL;
-- IF NOT EXISTS: on a large table, build both beforehand with
-- CREATE INDEX CONCURRENTLY under these names (docs/operations.md); this
-- transaction then only alters columns, which takes no table scan.
