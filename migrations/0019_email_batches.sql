-- Batch sending (delivery/batches.ts): several emails in one provider
-- request, each member keeping its own history.
--
-- email_batches is one provider request and its members, in request order.
-- A batch is `open` while its members are bound to it: from just before the
-- request until its result is recorded, and on past that while the outcome
-- is unknown on a provider that deduplicates the batch on its key (Resend).
-- An open batch is resent only whole, under the same key, with the same
-- members in the same order; its members are never leased one by one.
CREATE TABLE email_batches (
  id         uuid PRIMARY KEY,
  account    text NOT NULL,
  provider   text NOT NULL,
  members    text[] NOT NULL CHECK (cardinality(members) >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  open       boolean NOT NULL DEFAULT true
);

-- The open batches an account's rounds look for: few at any time.
CREATE INDEX email_batches_open ON email_batches (account, created_at) WHERE open;
-- Retention prunes batches by age.
CREATE INDEX email_batches_created ON email_batches (created_at);

-- The open batch an intent is bound to (NULL: none). Not indexed, so a
-- lease stays a HOT update (migration 0015); an open batch lists its members.
ALTER TABLE email_outbox ADD COLUMN batch_id uuid;

-- A batch carrying the intent was refused whole without naming the email at
-- fault (Resend's strict validation names none): from then on it is sent
-- alone, so only the one at fault is refused.
ALTER TABLE email_outbox ADD COLUMN send_alone boolean NOT NULL DEFAULT false;

-- The batch an attempt was sent in (NULL: sent alone).
ALTER TABLE email_attempts ADD COLUMN batch_id uuid;
