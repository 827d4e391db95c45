-- An operator turning an application webhook endpoint off (`leasehold
-- webhooks deactivate`) is audited like every change. Delivery processes no
-- longer turn endpoints off by themselves: one started without an endpoint
-- configured leaves it on and warns, so a process with an older
-- configuration cannot stop the fleet's events.
ALTER TABLE audit_log
  DROP CONSTRAINT audit_log_action,
  ADD CONSTRAINT audit_log_action CHECK (action IN (
    'delivery.pause', 'delivery.resume', 'rate_limit.set', 'account.pause', 'account.resume',
    'intent.replay', 'intent.move', 'suppression.add', 'suppression.remove',
    'erasure.address', 'erasure.tenant', 'retention.run',
    'tenant.policy_set', 'tenant.policy_delete', 'tenant.pause', 'tenant.resume',
    'auth.refused', 'auth.locked', 'webhook.replay', 'webhook_endpoint.deactivate')) NOT VALID;
