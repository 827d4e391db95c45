-- Tenants (issue 25, part 3): a policy per tenant, stored here because
-- tenants come and go while the fleet runs (no configuration file). Its
-- one module is src/tables/tenants.ts; the rules are
-- src/model/tenant-policy.ts, mirrored by the CHECKs below. A tenant
-- without a row shares its account fairly, with no cap, weight 1 and the
-- templates' sender.
--
-- The empty tenant '' (every hold's default) is a tenant like any other
-- and may have a policy too.
--
-- Retention does not prune or erase this table (src/retention/policy.ts
-- has no entry for it): a row is configuration, not history, and lives
-- until an operator deletes it; its addresses (from_address, reply_to)
-- are the tenant business's own senders, not a customer's personal data.
CREATE TABLE tenant_policies (
  tenant       text PRIMARY KEY,
  -- The cap: a token bucket by the account limiter's rules
  -- (src/model/delivery-policy.ts), both or neither. NULL: no cap.
  per_second   double precision,
  burst        integer,
  -- Share of an account's permits against other tenants with due email.
  weight       integer NOT NULL DEFAULT 1,
  -- A provider account (ACCOUNT_NAME, src/model/accounts.ts); whether it is
  -- configured is checked where the accounts are known (API, CLI), since
  -- the accounts file is not in the database.
  account      text,
  -- Override the templates' sender and reply-to (SENDER_PATTERN,
  -- src/model/address.ts).
  from_address text,
  reply_to     text,
  -- The cap's bucket, for the delivery lane to take a tenant's permits in
  -- SQL as it does an account's (rate_limiter). Set to burst / now() when a
  -- cap is first set, carried over (at most the new burst) when the cap
  -- changes, NULL without a cap; the policy's CRUD touches them only then.
  tokens       double precision,
  refilled_at  timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tenant_policies_tenant_format
    CHECK (tenant ~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$'),
  CONSTRAINT tenant_policies_cap
    CHECK ((per_second IS NULL) = (burst IS NULL)),
  CONSTRAINT tenant_policies_per_second
    CHECK (per_second >= 0.001 AND per_second <= 1000000),
  CONSTRAINT tenant_policies_burst
    CHECK (burst >= 1 AND burst <= 1000000),
  CONSTRAINT tenant_policies_weight
    CHECK (weight >= 1 AND weight <= 1000),
  CONSTRAINT tenant_policies_account_format
    CHECK (account ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  CONSTRAINT tenant_policies_from_format
    CHECK (length(from_address) <= 320
           AND from_address ~ '^([^<>\r\n]{0,200}<[^[:space:]@<>]+@[^[:space:]@<>]+>|[^[:space:]@<>]+@[^[:space:]@<>]+)$'),
  CONSTRAINT tenant_policies_reply_to_format
    CHECK (length(reply_to) <= 320
           AND reply_to ~ '^([^<>\r\n]{0,200}<[^[:space:]@<>]+@[^[:space:]@<>]+>|[^[:space:]@<>]+@[^[:space:]@<>]+)$'),
  CONSTRAINT tenant_policies_bucket
    CHECK (CASE WHEN per_second IS NULL THEN tokens IS NULL AND refilled_at IS NULL
                ELSE tokens IS NOT NULL AND refilled_at IS NOT NULL AND tokens >= 0 AND tokens <= burst END)
);
