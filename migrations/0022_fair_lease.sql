-- The fair lease (tables/outbox/lane.ts fairNextSql): a round shares its
-- permits among the tenants with pending intents. It walks the tenants with
-- one index descent each (a skip scan) and takes each tenant's oldest due
-- intents, through this index. Leases write none of its columns, so they
-- stay HOT updates (migration 0015).
CREATE INDEX email_outbox_tenant_due ON email_outbox (tenant, available_at) WHERE state = 'pending';
