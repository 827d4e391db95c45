-- The last hour of both lanes, for the dashboard's charts (issue 27): a tab
-- opened now draws backlog and oldest ages from the past hour instead of
-- starting empty. A ring of 360 slots, one per 10 s: the sampler
-- (src/read/lane-sampler.ts, in the process serving the API) upserts the
-- lane numbers `leasehold status` computes into slot
-- floor(epoch / 10) % 360 once per 10 s, so each slot holds the latest
-- sample of its 10 s of the hour and is overwritten an hour later. Several
-- processes sampling at once write the same slot with the same numbers:
-- harmless. Its one module is src/tables/lane-samples.ts.
--
-- Retention: none needed, the ring never grows past 360 rows (a slot not
-- written for over an hour is simply not read: readers filter by
-- sampled_at). No personal data: counts and ages only.
CREATE TABLE lane_samples (
  slot                  integer PRIMARY KEY,
  -- When the numbers were read (the database clock, or the injected one).
  sampled_at            timestamptz NOT NULL,
  -- Pending intents (leased and backed-off ones included).
  backlog               integer NOT NULL,
  -- Holds still held past their expires_at.
  due_holds             integer NOT NULL,
  -- Seconds the oldest pending intent and the oldest due hold have waited (0: none).
  oldest_pending_age_s  double precision NOT NULL,
  oldest_due_hold_age_s double precision NOT NULL,
  CONSTRAINT lane_samples_slot CHECK (slot BETWEEN 0 AND 359),
  CONSTRAINT lane_samples_counts CHECK (backlog >= 0 AND due_holds >= 0),
  CONSTRAINT lane_samples_ages CHECK (oldest_pending_age_s >= 0 AND oldest_due_hold_age_s >= 0)
) WITH (fillfactor = 50); -- room on the page for HOT updates: only the key is indexed
