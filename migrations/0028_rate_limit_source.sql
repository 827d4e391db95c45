-- Where the rate limit in force came from (issue 38: a configured limit was
-- silently not applied on an existing database). The configuration
-- (LEASEHOLD_RATE_PER_SECOND and LEASEHOLD_RATE_BURST, or an accounts
-- file's `rate:`) is applied by a delivery process at its start when it
-- differs from the configuration last applied to the row; while it stays
-- the same, an operator's change at run time (`leasehold rate-limit`,
-- PUT /v1/rate-limit, the dashboard) stays in force. Both are audited.
ALTER TABLE rate_limiter
  -- The configuration last applied to this row. NULL: none known (a row an
  -- operator's change created, or one an operator set before this
  -- migration): the next start records its configuration here and keeps
  -- the limit in force.
  ADD COLUMN config_per_second double precision,
  ADD COLUMN config_burst      integer,
  -- Who set the limit in force: the configuration, or an operator.
  ADD COLUMN limit_source      text NOT NULL DEFAULT 'configuration',
  -- The operator (the audit log's actor: a token name, cli:<os user>,
  -- library...), or the configuration's variable; NULL: not known.
  ADD COLUMN limit_set_by      text,
  ADD COLUMN limit_set_at      timestamptz,
  ADD CONSTRAINT rate_limiter_limit_source CHECK (limit_source IN ('configuration', 'operator')),
  ADD CONSTRAINT rate_limiter_config_policy CHECK ((config_per_second IS NULL) = (config_burst IS NULL));

-- The rows already there. An operator's change is known by the audit log
-- (migration 0025): where an account's latest rate_limit.set entry set the
-- limit in force, that limit is the operator's and stays through the first
-- start after the upgrade. Every other row holds what a start wrote, the
-- configuration of its day, so a configuration that differs now applies.
WITH latest AS (
  SELECT DISTINCT ON (target) target, actor, at, after
    FROM audit_log
   WHERE action = 'rate_limit.set' AND jsonb_typeof(after -> 'perSecond') = 'number' AND jsonb_typeof(after -> 'burst') = 'number'
   ORDER BY target, at DESC, id DESC
)
UPDATE rate_limiter l
   SET limit_source = 'operator', limit_set_by = latest.actor, limit_set_at = latest.at
  FROM latest
 WHERE latest.target = l.name
   AND (latest.after ->> 'perSecond')::float8 = l.per_second
   AND (latest.after ->> 'burst')::float8 = l.burst;

UPDATE rate_limiter
   SET config_per_second = per_second, config_burst = burst, limit_set_at = updated_at
 WHERE limit_source = 'configuration';
