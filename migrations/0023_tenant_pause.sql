-- Pausing one tenant (issue 25): its intents stay pending and are leased by
-- no round until it is resumed; every other tenant goes on. A paused tenant
-- without a policy gets a row holding only the pause.
ALTER TABLE tenant_policies
  ADD COLUMN paused       boolean NOT NULL DEFAULT false,
  ADD COLUMN paused_reason text,
  ADD COLUMN paused_at    timestamptz,
  ADD CONSTRAINT tenant_policies_pause CHECK (NOT paused OR (paused_reason IS NOT NULL AND paused_at IS NOT NULL)),
  ADD CONSTRAINT tenant_policies_pause_reason CHECK (length(paused_reason) <= 500);
