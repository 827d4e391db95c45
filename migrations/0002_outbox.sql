-- Email intents, one per expired hold, written in the expiry transaction.
-- States (mirrors src/outbox/states.ts): pending -> sent | rejected | dead.
-- "Leased" is a pending intent with a live lease: while leased, available_at
-- equals lease_expires_at, so an expired lease makes the row eligible again
-- through the same index the lease query already uses.
CREATE TABLE email_outbox (
  id                 text        PRIMARY KEY,
  reservation_id     text        NOT NULL UNIQUE REFERENCES support_reservations (id),
  recipient          text        NOT NULL,
  template           text        NOT NULL,
  state              text        NOT NULL DEFAULT 'pending',
  attempts           integer     NOT NULL DEFAULT 0,
  failed_attempts    integer     NOT NULL DEFAULT 0,
  available_at       timestamptz NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  sent_at            timestamptz,
  finished_at        timestamptz,
  receipt            text,
  last_error         text,
  lease_token        uuid,
  lease_expires_at   timestamptz,
  lease_expirations  integer     NOT NULL DEFAULT 0,
  replays            integer     NOT NULL DEFAULT 0,
  possible_duplicate boolean     NOT NULL DEFAULT false,
  CONSTRAINT email_outbox_state CHECK (state IN ('pending', 'sent', 'rejected', 'dead')),
  CONSTRAINT email_outbox_lease_pair CHECK ((lease_token IS NULL) = (lease_expires_at IS NULL)),
  CONSTRAINT email_outbox_lease_only_pending CHECK (lease_token IS NULL OR state = 'pending'),
  CONSTRAINT email_outbox_sent_has_receipt CHECK (state <> 'sent' OR (sent_at IS NOT NULL AND receipt IS NOT NULL)),
  CONSTRAINT email_outbox_terminal_finished CHECK ((state = 'pending') = (finished_at IS NULL)),
  CONSTRAINT email_outbox_counts CHECK (attempts >= 0 AND failed_attempts >= 0 AND failed_attempts <= attempts)
);

-- Hot paths: leasing (due pending rows in order) and the oldest-pending age.
CREATE INDEX email_outbox_available ON email_outbox (available_at) WHERE state = 'pending';
CREATE INDEX email_outbox_pending_age ON email_outbox (created_at) WHERE state = 'pending';
-- Operator listing, newest first, with keyset paging.
CREATE INDEX email_outbox_listing ON email_outbox (created_at DESC, id DESC);
CREATE INDEX email_outbox_state_listing ON email_outbox (state, created_at DESC, id DESC);

-- One row per send attempt, so an intent's whole story can be told.
CREATE TABLE email_attempts (
  intent_id       text        NOT NULL REFERENCES email_outbox (id),
  attempt         integer     NOT NULL,
  lease_token     uuid        NOT NULL,
  provider        text,
  started_at      timestamptz NOT NULL,
  finished_at     timestamptz,
  outcome         text,
  outcome_unknown boolean     NOT NULL DEFAULT false,
  provider_status integer,
  provider_code   text,
  receipt         text,
  error           text,
  duration_ms     integer,
  PRIMARY KEY (intent_id, attempt),
  CONSTRAINT email_attempts_outcome CHECK (outcome IS NULL OR outcome IN
    ('accepted', 'rate_limited', 'rejected', 'failed', 'paused', 'lease_expired', 'abandoned')),
  CONSTRAINT email_attempts_finished CHECK ((outcome IS NULL) = (finished_at IS NULL)),
  CONSTRAINT email_attempts_receipt CHECK (outcome <> 'accepted' OR receipt IS NOT NULL)
);
