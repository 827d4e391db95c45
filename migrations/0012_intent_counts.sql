-- Intents by state without reading the outbox (issue 10): status, /metrics
-- and the dashboard used to run SELECT state, count(*) ... GROUP BY state,
-- a scan of the whole history on every poll. The counts are kept here
-- instead, changed by statement-level triggers in the same transaction as
-- the rows they count, so they are exact (not estimates) for every reader.
--
-- Each state has SHARDS rows; a statement changes only the rows of its
-- backend's shard (pg_backend_pid() % 64), so delivery workers recording
-- at once do not queue behind one row lock until each other's commit. A
-- reader sums the shards (tables/intent-counts.ts). A shard's own number
-- may go negative (an intent inserted on one shard, sent on another); only
-- the sum means anything.
CREATE TABLE email_outbox_counts (
  state text   NOT NULL,
  shard integer NOT NULL,
  n     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (state, shard),
  CONSTRAINT email_outbox_counts_state CHECK (state IN ('pending', 'sent', 'rejected', 'dead'))
) WITH (fillfactor = 50); -- room on the page for HOT updates: n is not indexed

-- Every row exists from the start, so a trigger only ever UPDATEs.
INSERT INTO email_outbox_counts (state, shard)
SELECT st, sh FROM unnest(ARRAY['pending', 'sent', 'rejected', 'dead']) AS st, generate_series(0, 63) AS sh;

-- Seed from the rows already there (the migration's transaction holds the
-- table's lock from here on: the triggers below see every later change).
LOCK TABLE email_outbox IN SHARE ROW EXCLUSIVE MODE;
UPDATE email_outbox_counts c SET n = o.n
  FROM (SELECT state, count(*) AS n FROM email_outbox GROUP BY state) o
 WHERE c.state = o.state AND c.shard = 0;

-- One function for the three triggers (PostgreSQL allows transition tables
-- on single-event triggers only). The net change per state of the whole
-- statement is applied once per state, in state order, so two statements on
-- one shard always lock its rows in the same order (no deadlock between
-- them), and a statement that changes no state (a lease, an erasure) writes
-- nothing at all.
CREATE FUNCTION email_outbox_count_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  states text[];
  deltas bigint[];
BEGIN
  -- Each branch names only the transition tables its event has.
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(state ORDER BY state), array_agg(d ORDER BY state) INTO states, deltas
      FROM (SELECT state, count(*) AS d FROM new_rows GROUP BY state) c;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(state ORDER BY state), array_agg(d ORDER BY state) INTO states, deltas
      FROM (SELECT state, -count(*) AS d FROM old_rows GROUP BY state) c;
  ELSE
    SELECT array_agg(state ORDER BY state), array_agg(d ORDER BY state) INTO states, deltas
      FROM (SELECT state, sum(d) AS d
              FROM (SELECT state, 1 AS d FROM new_rows UNION ALL SELECT state, -1 FROM old_rows) u
             GROUP BY state HAVING sum(d) <> 0) c;
  END IF;
  FOR i IN 1 .. coalesce(array_length(states, 1), 0) LOOP
    UPDATE email_outbox_counts SET n = n + deltas[i]
     WHERE state = states[i] AND shard = pg_backend_pid() % 64;
  END LOOP;
  RETURN NULL;
END
$$;

CREATE TRIGGER email_outbox_count_inserts
  AFTER INSERT ON email_outbox REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_outbox_count_changes();
CREATE TRIGGER email_outbox_count_updates
  AFTER UPDATE ON email_outbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_outbox_count_changes();
CREATE TRIGGER email_outbox_count_deletes
  AFTER DELETE ON email_outbox REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_outbox_count_changes();

-- TRUNCATE (directly or cascaded from support_reservations) empties the outbox.
CREATE FUNCTION email_outbox_count_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
  UPDATE email_outbox_counts SET n = 0 WHERE n <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER email_outbox_count_truncates
  AFTER TRUNCATE ON email_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION email_outbox_count_truncate();
