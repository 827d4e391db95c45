-- The audit log (issue: operator access): who changed what, when, through
-- which request. Written in the same transaction as the change it records
-- (src/ops.ts; its one module is src/tables/audit-log.ts), so a change and
-- its entry commit or roll back together. The actions are
-- src/model/audit-actions.ts, mirrored by the CHECK below.
--
-- No recipient address or message body is ever stored here: erasure
-- records counts, a suppression its hash. Retention prunes it by age on its
-- own LEASEHOLD_AUDIT_RETENTION_DAYS (default 365), not the stories'.
CREATE TABLE audit_log (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The change's transaction time (the database clock, or the injected one).
  at         timestamptz NOT NULL DEFAULT now(),
  -- A token name, cli:<os user>, library or library:<name>.
  actor      text NOT NULL,
  action     text NOT NULL,
  -- What was changed: an account, an intent id, a tenant, an address hash...
  target     text,
  request_id text,
  -- The values before and after, where a setting changed.
  before     jsonb,
  after      jsonb,
  -- Anything else worth keeping: counts, a reason, how many refusals were not recorded.
  detail     jsonb,
  CONSTRAINT audit_log_action CHECK (action IN (
    'delivery.pause', 'delivery.resume', 'rate_limit.set', 'account.pause', 'account.resume',
    'intent.replay', 'intent.move', 'suppression.add', 'suppression.remove',
    'erasure.address', 'erasure.tenant', 'retention.run',
    'tenant.policy_set', 'tenant.policy_delete', 'tenant.pause', 'tenant.resume',
    'auth.refused', 'auth.locked')),
  CONSTRAINT audit_log_actor_length CHECK (length(actor) BETWEEN 1 AND 200),
  CONSTRAINT audit_log_target_length CHECK (length(target) <= 500),
  CONSTRAINT audit_log_request_id_length CHECK (length(request_id) <= 200)
);

-- Newest first (GET /v1/audit, the dashboard), and by age for retention.
CREATE INDEX audit_log_at ON audit_log (at, id);
-- One action's history (the rate-limit chart reads rate_limit.set).
CREATE INDEX audit_log_action_at ON audit_log (action, at, id);
