-- "Sends by outcome over the last minute/hour" (status, the dashboard) reads
-- only recent attempts; without this it scanned the whole attempts history.
CREATE INDEX email_attempts_finished ON email_attempts (finished_at) WHERE finished_at IS NOT NULL;
