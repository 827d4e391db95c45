-- Whether any attempt of the intent's current round (since its last replay)
-- ended ambiguously: a lease that expired without a result (the worker died
-- or stalled, possibly after the provider accepted), or a timeout/5xx
-- recorded as outcome unknown. Later attempts must assume the provider may
-- already hold the message (SPEC invariant 10) however many clear answers
-- (429, failed before sending, paused) came in between, so it is kept on the
-- intent instead of being read from the latest attempt only.
ALTER TABLE email_outbox ADD COLUMN outcome_unknown_seen boolean NOT NULL DEFAULT false;

-- Backfill from the history. Attempts carry no replay number, so an
-- ambiguous attempt from before a replay flags the new round too: the safe
-- direction (a lookup before sending, or a possible_duplicate flag).
-- An attempt still open is not counted here: its intent still holds that
-- lease, and the next lease, finding the old token, sets the flag itself.
UPDATE email_outbox o SET outcome_unknown_seen = true
 WHERE EXISTS (SELECT 1 FROM email_attempts a
                WHERE a.intent_id = o.id AND (a.outcome_unknown OR a.outcome = 'lease_expired'));
