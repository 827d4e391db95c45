-- The application's expiry hook (issue 41): LEASEHOLD_EXPIRE_HOOK, or the
-- library's onExpired, runs inside the expiry transaction. A hold whose hook
-- call fails by itself (found by bisecting the batch, src/holds/expire-hook.ts)
-- stays `held` and is tried again with back-off; this table is that back-off.
-- One row per such hold, from its first failure until its hook succeeds (the
-- row is deleted in the transaction that expires it) or the hold is deleted
-- (ON DELETE CASCADE, so retention needs no entry for it). Its one module is
-- src/tables/hook-failures.ts.
--
-- A table of its own rather than columns on support_reservations: the hot
-- expiry statement skips the holds waiting here through an uncorrelated
-- InitPlan over expire_hook_failures_retry (empty in the usual case), and a
-- hook failure never updates a hold's row, so nothing watching that row
-- (triggers, the timeline) sees a change that did not happen.
--
-- last_error is the database's error as the hook raised it, with every
-- address-looking token replaced by <address> before it is stored.
CREATE TABLE expire_hook_failures (
  hold_id         text        PRIMARY KEY REFERENCES support_reservations (id) ON DELETE CASCADE,
  -- Failed calls so far; the back-off doubles with each.
  attempts        integer     NOT NULL,
  first_failed_at timestamptz NOT NULL,
  last_failed_at  timestamptz NOT NULL,
  -- Not expired again before this.
  retry_at        timestamptz NOT NULL,
  -- SQLSTATE of the last failure (57014: the hook ran past its statement_timeout), or NULL for a callback's own error.
  last_code       text,
  last_error      text        NOT NULL,
  CONSTRAINT expire_hook_failures_attempts CHECK (attempts >= 1),
  CONSTRAINT expire_hook_failures_order CHECK (retry_at >= last_failed_at AND last_failed_at >= first_failed_at)
);
-- The expiry statement reads the holds still waiting (retry_at > now), one end of this index.
CREATE INDEX expire_hook_failures_retry ON expire_hook_failures (retry_at);
