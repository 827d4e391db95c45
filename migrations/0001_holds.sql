-- Holds: something reserved for a while (a callback slot, a seat, a cart).
-- States (mirrors src/holds/states.ts): held -> confirmed | cancelled | expired.
CREATE TABLE support_reservations (
  id             text        PRIMARY KEY,
  customer_email text        NOT NULL,
  status         text        NOT NULL DEFAULT 'held',
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  confirmed_at   timestamptz,
  cancelled_at   timestamptz,
  expired_at     timestamptz,
  metadata       jsonb       NOT NULL DEFAULT '{}'::jsonb,
  -- Fingerprint of the create request: the same id with the same request is
  -- an idempotent retry, the same id with another request is a conflict.
  request_hash   text        NOT NULL,
  CONSTRAINT support_reservations_id_format
    CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
  CONSTRAINT support_reservations_status
    CHECK (status IN ('held', 'confirmed', 'cancelled', 'expired')),
  -- Exactly the timestamp of the terminal state is set, so a hold can only
  -- ever have left 'held' once and the row says when.
  CONSTRAINT support_reservations_terminal_timestamps CHECK (
    (status = 'held'      AND confirmed_at IS NULL     AND cancelled_at IS NULL     AND expired_at IS NULL) OR
    (status = 'confirmed' AND confirmed_at IS NOT NULL AND cancelled_at IS NULL     AND expired_at IS NULL) OR
    (status = 'cancelled' AND confirmed_at IS NULL     AND cancelled_at IS NOT NULL AND expired_at IS NULL) OR
    (status = 'expired'   AND confirmed_at IS NULL     AND cancelled_at IS NULL     AND expired_at IS NOT NULL)
  ),
  CONSTRAINT support_reservations_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);

-- The expiry scan reads only live holds; terminal rows (the vast majority
-- over time) never enter this index, so the scan costs the same at 10M rows.
CREATE INDEX support_reservations_due ON support_reservations (expires_at) WHERE status = 'held';
