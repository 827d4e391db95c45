-- Retention reaches two tables that age on their own (src/retention/policy.ts,
-- RETENTION_TABLES.standalone): provider events for no known intent, pruned by
-- the provider's timestamp, and suppressions, whose addresses are erased by
-- age while the hash stays. Each batch and the oldest-age gauges read one end
-- of these indexes instead of scanning the tables.
CREATE INDEX email_events_unmatched_age ON email_events (occurred_at) WHERE intent_id IS NULL;
CREATE INDEX suppressions_unerased_age ON suppressions (created_at) WHERE address IS NOT NULL;
