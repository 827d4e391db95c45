-- What providers report after they accepted a message (delivered, bounced,
-- complained, ...), through their webhooks or the sandbox, and the
-- suppression list that hard bounces and complaints feed.

-- An event names the provider's message id, which is the receipt of the
-- accepted attempt. The attempts keep every receipt an intent ever had
-- (email_outbox.receipt is cleared by a replay), so events are matched there.
CREATE INDEX email_attempts_receipt ON email_attempts (receipt) WHERE receipt IS NOT NULL;

-- Kinds (mirrors src/events/kinds.ts).
CREATE TABLE email_events (
  id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  provider            text        NOT NULL,
  -- The provider's own event id (Resend: svix-id, SES: feedbackId or SNS
  -- message), or a hash of the fields that identify the event where the
  -- provider gives none (Postmark deliveries): what makes a resend a duplicate.
  provider_event_id   text        NOT NULL,
  provider_message_id text        NOT NULL,
  -- NULL: no accepted attempt had this receipt when the event arrived (an
  -- unknown message, or an event faster than the recorded receipt); the read
  -- side also matches by receipt, so a late receipt still finds its events.
  -- The event belongs to the intent's story and goes with it.
  intent_id           text        REFERENCES email_outbox (id) ON DELETE CASCADE,
  kind                text        NOT NULL,
  bounce_type         text,
  -- The provider's own words for it ("HardBounce", "Permanent/General", ...).
  provider_type       text,
  -- Diagnostic text with every address replaced by <address>.
  reason              text,
  -- The provider's timestamp of the event; ordering uses it, not arrival.
  occurred_at         timestamptz NOT NULL,
  received_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT email_events_unique UNIQUE (provider, provider_event_id),
  CONSTRAINT email_events_kind CHECK (kind IN ('delivered', 'bounced', 'complained', 'delayed', 'failed')),
  CONSTRAINT email_events_bounce_type CHECK (
    (kind = 'bounced' AND bounce_type IN ('hard', 'soft')) OR (kind <> 'bounced' AND bounce_type IS NULL)
  )
);

CREATE INDEX email_events_message ON email_events (provider_message_id);
CREATE INDEX email_events_intent ON email_events (intent_id) WHERE intent_id IS NOT NULL;
-- Bounce and complaint rates over a recent window.
CREATE INDEX email_events_occurred ON email_events (occurred_at);

-- Addresses never to send to again. Keyed by the hex SHA-256 of the trimmed,
-- lower-cased address, so erasure can set `address` to NULL and the
-- suppression keeps working: the delivery lane only ever compares hashes.
-- Reasons (mirrors src/suppressions/reasons.ts).
CREATE TABLE suppressions (
  address_hash text        PRIMARY KEY,
  address      text,
  reason       text        NOT NULL,
  detail       text,
  provider     text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT suppressions_hash_format CHECK (address_hash ~ '^[0-9a-f]{64}$'),
  CONSTRAINT suppressions_hash_matches CHECK (
    address IS NULL OR address_hash = encode(sha256(convert_to(address, 'UTF8')), 'hex')
  ),
  CONSTRAINT suppressions_reason CHECK (reason IN ('hard_bounce', 'complaint', 'manual'))
);

-- Operator listing, newest first, keyset-paged.
CREATE INDEX suppressions_listing ON suppressions (created_at DESC, address_hash DESC);
