-- Signed webhooks to the application (issue 41, part 2): every change the
-- application may react to writes an event in the transaction of the
-- change, and a lane of its own (src/webhooks/) delivers it, signed per
-- Standard Webhooks, at least once under one webhook-id.
--
-- The events are written by statement-level AFTER triggers over transition
-- tables: they are in the change's transaction by construction, set-based
-- (one INSERT per statement, however many rows it changed), and they cover
-- every path that changes a hold or an intent (the lanes, the library, the
-- SQL functions create_hold/confirm_hold/cancel_hold/extend_hold, an
-- operator's replay) without a line in any of them.

-- The configured endpoints (LEASEHOLD_WEBHOOK_URL, LEASEHOLD_WEBHOOKS_FILE),
-- written by the process running the webhook lane at its start: the name
-- and what it wants, never its URL or secret (those stay in the
-- environment). The triggers read this table first: with no active
-- endpoint they return after one index probe, so a fleet without webhooks
-- pays next to nothing per statement.
CREATE TABLE webhook_endpoints (
  name       text        PRIMARY KEY,
  -- NULL: every event type; else only these.
  types      text[],
  -- NULL: every tenant; else only these ('' is the empty tenant).
  tenants    text[],
  active     boolean     NOT NULL DEFAULT true,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_endpoints_name CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$')
);
CREATE INDEX webhook_endpoints_active ON webhook_endpoints (name) WHERE active;

-- One row per (event, endpoint): each endpoint retries, gives up and is
-- replayed on its own. The id is the webhook-id, the same on every retry.
-- States (mirrors src/model/webhook-events.ts):
--   pending -> delivered | dead; dead -> pending (replay).
-- Leased: a pending row with a live lease (token + expiry), as in email_outbox.
CREATE TABLE webhook_events (
  id               text        PRIMARY KEY,
  endpoint         text        NOT NULL,
  type             text        NOT NULL,
  hold_id          text,
  intent_id        text,
  tenant           text        NOT NULL DEFAULT '',
  -- The body exactly as sent: {type, timestamp, data}. No address, no message.
  payload          jsonb       NOT NULL,
  occurred_at      timestamptz NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- When the current effort to deliver it began: written, or replayed. The
  -- give-up bound (LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S) counts from here.
  due_since        timestamptz NOT NULL DEFAULT now(),
  state            text        NOT NULL DEFAULT 'pending',
  attempts         integer     NOT NULL DEFAULT 0,
  available_at     timestamptz NOT NULL DEFAULT now(),
  lease_token      uuid,
  lease_expires_at timestamptz,
  -- The last attempt's HTTP status (NULL: no answer: timeout, refused) and error.
  last_status      integer,
  last_error       text,
  finished_at      timestamptz,
  replays          integer     NOT NULL DEFAULT 0,
  CONSTRAINT webhook_events_state CHECK (state IN ('pending', 'delivered', 'dead')),
  CONSTRAINT webhook_events_type CHECK (type IN (
    'hold.expired', 'hold.confirmed', 'hold.cancelled', 'hold.extended',
    'email.accepted', 'email.rejected', 'email.missed_deadline', 'email.bounced', 'email.complained')),
  CONSTRAINT webhook_events_lease_pair CHECK ((lease_token IS NULL) = (lease_expires_at IS NULL)),
  CONSTRAINT webhook_events_lease_only_pending CHECK (lease_token IS NULL OR state = 'pending'),
  CONSTRAINT webhook_events_terminal_finished CHECK ((state = 'pending') = (finished_at IS NULL))
);

-- The lane's lease: an endpoint's due rows in order.
CREATE INDEX webhook_events_due ON webhook_events (endpoint, available_at) WHERE state = 'pending';
-- The oldest pending age (metrics), a hold's events (timeline), the dead ones (operators).
CREATE INDEX webhook_events_pending_age ON webhook_events (created_at) WHERE state = 'pending';
CREATE INDEX webhook_events_hold ON webhook_events (hold_id) WHERE hold_id IS NOT NULL;
CREATE INDEX webhook_events_listing ON webhook_events (state, created_at DESC, id DESC);
-- Retention (src/retention/policy.ts): finished rows age on their own.
CREATE INDEX webhook_events_finished_age ON webhook_events (created_at) WHERE state <> 'pending';

-- ISO 8601 in UTC with milliseconds, as JSON.stringify writes a Date.
CREATE FUNCTION webhook_time_(at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE
AS $$ SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- Fan the changes (type, tenant, hold, intent, time, data) out to every
-- active endpoint that wants them. `changes` is a temporary view over the
-- transition tables made by the caller's query; plpgsql passes it as jsonb.
CREATE FUNCTION webhook_fan_out_(changes jsonb) RETURNS void
LANGUAGE sql
VOLATILE
SET search_path FROM CURRENT
AS $$
  INSERT INTO webhook_events (id, endpoint, type, hold_id, intent_id, tenant, payload, occurred_at)
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.name, c->>'type', c->>'holdId', c->>'intentId',
         coalesce(c->>'tenant', ''),
         jsonb_build_object('type', c->>'type', 'timestamp', webhook_time_((c->>'at')::timestamptz), 'data', c->'data'),
         (c->>'at')::timestamptz
    FROM jsonb_array_elements(changes) c
    JOIN webhook_endpoints e
      ON e.active
     AND (e.types IS NULL OR c->>'type' = ANY (e.types))
     AND (e.tenants IS NULL OR coalesce(c->>'tenant', '') = ANY (e.tenants))
$$;

-- A hold left `held` (expired, confirmed, cancelled) or was extended.
CREATE FUNCTION webhook_hold_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  changes jsonb;
BEGIN
  -- The common case, no endpoint: one probe of a tiny index, nothing else.
  PERFORM 1 FROM webhook_endpoints WHERE active LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'type', CASE WHEN n.status = 'held' THEN 'hold.extended' ELSE 'hold.' || n.status END,
           'tenant', n.tenant, 'holdId', n.id,
           'at', CASE n.status WHEN 'expired' THEN n.expired_at WHEN 'confirmed' THEN n.confirmed_at
                               WHEN 'cancelled' THEN n.cancelled_at ELSE now() END,
           'data', jsonb_strip_nulls(jsonb_build_object(
             'holdId', n.id, 'tenant', n.tenant, 'state', n.status,
             'expiresAt', webhook_time_(n.expires_at), 'createdAt', webhook_time_(n.created_at),
             'expiredAt', webhook_time_(n.expired_at), 'confirmedAt', webhook_time_(n.confirmed_at),
             'cancelledAt', webhook_time_(n.cancelled_at),
             'previousExpiresAt', CASE WHEN n.status = 'held' THEN webhook_time_(o.expires_at) END))))
    INTO changes
    FROM new_rows n JOIN old_rows o ON o.id = n.id
   WHERE o.status = 'held'
     AND (n.status IN ('expired', 'confirmed', 'cancelled') OR (n.status = 'held' AND n.expires_at <> o.expires_at));
  IF changes IS NOT NULL THEN
    PERFORM webhook_fan_out_(changes);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER webhook_hold_updates
  AFTER UPDATE ON support_reservations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION webhook_hold_changes();

-- An email ended: accepted (sent), rejected, or missed its deadline.
CREATE FUNCTION webhook_email_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  changes jsonb;
BEGIN
  PERFORM 1 FROM webhook_endpoints WHERE active LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'type', CASE n.state WHEN 'sent' THEN 'email.accepted' ELSE 'email.' || n.state END,
           'tenant', n.tenant, 'holdId', n.reservation_id, 'intentId', n.id,
           'at', coalesce(CASE WHEN n.state = 'sent' THEN n.sent_at END, n.finished_at, now()),
           'data', jsonb_strip_nulls(jsonb_build_object(
             'intentId', n.id, 'holdId', n.reservation_id, 'tenant', n.tenant, 'kind', n.template,
             'outcome', n.state, 'attempts', n.attempts,
             'sentAt', webhook_time_(n.sent_at), 'finishedAt', webhook_time_(n.finished_at)))))
    INTO changes
    FROM new_rows n JOIN old_rows o ON o.id = n.id
   WHERE n.state IS DISTINCT FROM o.state AND n.state IN ('sent', 'rejected', 'missed_deadline');
  IF changes IS NOT NULL THEN
    PERFORM webhook_fan_out_(changes);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER webhook_email_updates
  AFTER UPDATE ON email_outbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION webhook_email_changes();

-- A provider reported a bounce or a complaint.
CREATE FUNCTION webhook_email_event_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  changes jsonb;
BEGIN
  PERFORM 1 FROM webhook_endpoints WHERE active LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'type', 'email.' || n.kind, 'tenant', coalesce(i.tenant, ''), 'holdId', i.reservation_id, 'intentId', n.intent_id,
           'at', n.occurred_at,
           'data', jsonb_strip_nulls(jsonb_build_object(
             'intentId', n.intent_id, 'holdId', i.reservation_id, 'tenant', coalesce(i.tenant, ''), 'kind', i.template,
             'outcome', n.kind, 'bounceType', n.bounce_type, 'provider', n.provider,
             'occurredAt', webhook_time_(n.occurred_at)))))
    INTO changes
    FROM new_rows n LEFT JOIN email_outbox i ON i.id = n.intent_id
   WHERE n.kind IN ('bounced', 'complained');
  IF changes IS NOT NULL THEN
    PERFORM webhook_fan_out_(changes);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER webhook_email_event_inserts
  AFTER INSERT ON email_events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION webhook_email_event_changes();

-- An operator's replay of a given-up webhook is audited like every change.
ALTER TABLE audit_log
  DROP CONSTRAINT audit_log_action,
  ADD CONSTRAINT audit_log_action CHECK (action IN (
    'delivery.pause', 'delivery.resume', 'rate_limit.set', 'account.pause', 'account.resume',
    'intent.replay', 'intent.move', 'suppression.add', 'suppression.remove',
    'erasure.address', 'erasure.tenant', 'retention.run',
    'tenant.policy_set', 'tenant.policy_delete', 'tenant.pause', 'tenant.resume',
    'auth.refused', 'auth.locked', 'webhook.replay')) NOT VALID;
