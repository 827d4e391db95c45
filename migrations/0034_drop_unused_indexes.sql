-- Two indexes every send paid for and no statement needs any more:
-- - email_attempts_accepted (0014) served the reputation gauges' count of
--   accepted sends, which read email_accepted_hours since 0016; each
--   accepted attempt still wrote an entry to it.
-- - email_outbox_listing (0002) ordered every intent for an unfiltered
--   listing; the listing now merges each state's walk of
--   email_outbox_state_listing (tables/outbox/operator.ts intentsList), so
--   an insert and a state change write one index entry fewer.
-- Measured on the tuned drain (BENCHMARKS.md): the server's CPU per 1,000
-- emails fell from 169-171 to 156-164 ms.
DROP INDEX IF EXISTS email_attempts_accepted;
DROP INDEX IF EXISTS email_outbox_listing;
