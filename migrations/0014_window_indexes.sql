-- The reputation gauges (leasehold_email_bounce_rate, _complaint_rate,
-- _accepted_24h) count a rolling 24 h window on every scrape. Through
-- email_attempts_finished and email_events_occurred that meant fetching
-- every attempt and every event of the day from the heap to test its
-- outcome or kind (about 66,000 of each at 2,000,000 a month). Each count
-- now has a partial index holding only the rows it counts, so it is an
-- index-only count of its own rows in the window: bounded by one day's
-- traffic, never by history. Hard bounces and complaints are a small
-- fraction of events, so those two indexes stay small.
CREATE INDEX IF NOT EXISTS email_attempts_accepted ON email_attempts (finished_at) WHERE outcome = 'accepted';
CREATE INDEX IF NOT EXISTS email_events_hard_bounces ON email_events (occurred_at) WHERE kind = 'bounced' AND bounce_type = 'hard';
CREATE INDEX IF NOT EXISTS email_events_complaints ON email_events (occurred_at) WHERE kind = 'complained';
-- IF NOT EXISTS: on a large table, build them beforehand with
-- CREATE INDEX CONCURRENTLY under these names (docs/operations.md).
