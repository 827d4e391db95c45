-- Provider accounts (src/model/accounts.ts): several at once, each with its
-- own quota, pause and cooldown, and failover between them that cannot
-- double-send.
--
-- rate_limiter gets one row per account, named by the account. The one
-- limiter of a single-provider fleet was named 'email'; that fleet's one
-- account is named 'default', and its row (with any rate set at run time)
-- keeps its state under the new name.
UPDATE rate_limiter SET name = 'default' WHERE name = 'email'
  AND NOT EXISTS (SELECT 1 FROM rate_limiter WHERE name = 'default');

-- An account's own pause (a provider's answer that is not the message's
-- fault: a bad key, a suspension, an exhausted quota, or an operator's
-- pause of that account alone). delivery_control stays the fleet-wide
-- switch, which outranks every account's.
ALTER TABLE rate_limiter
  ADD COLUMN paused       boolean NOT NULL DEFAULT false,
  ADD COLUMN reason       text,
  ADD COLUMN paused_by    text,
  ADD COLUMN paused_at    timestamptz,
  ADD COLUMN paused_until timestamptz,
  -- When the cooldown in force began: intents move to the next account once
  -- it has lasted longer than LEASEHOLD_FAILOVER_AFTER_S.
  ADD COLUMN cooldown_since timestamptz,
  -- Emails granted on the UTC day `quota_day`, against the account's
  -- dailyQuota (from the accounts file; none: not counted against).
  ADD COLUMN quota_day  date,
  ADD COLUMN quota_used integer NOT NULL DEFAULT 0,
  ADD CONSTRAINT rate_limiter_pause_reason CHECK (NOT paused OR reason IS NOT NULL);

-- Which account each intent is on, and each attempt went through. None of
-- them is indexed, so a lease stays a HOT update (migration 0015).
--   account:        the account the intent is routed to (its last lease's,
--                   or the next in failover after a send that never left);
--                   NULL: not yet leased, the first account in failover.
--   pinned_account: an attempt there ended with its outcome unknown; the
--                   intent may be sent only there (its idempotency key or
--                   lookup can still settle it) until it is finished, an
--                   operator moves it, or it is replayed.
--   sent_account:   the account that accepted it.
--   moved_unsettled: an operator moved it off an account where its outcome
--                   was unknown: an acceptance elsewhere may be a duplicate.
ALTER TABLE email_outbox
  ADD COLUMN account         text,
  ADD COLUMN pinned_account  text,
  ADD COLUMN sent_account    text,
  ADD COLUMN moved_unsettled boolean NOT NULL DEFAULT false;

ALTER TABLE email_attempts ADD COLUMN account text;
