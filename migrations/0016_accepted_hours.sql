-- Accepted sends per UTC hour (issue 10): the reputation gauges divide hard
-- bounces and complaints by the sends accepted in their window, and counting
-- those through email_attempts_accepted read one index entry per send of the
-- day: 66,667 entries, 4-8 ms a scrape at 2,000,000 stories a month, and
-- seconds at a thousand sends a second. The counts are kept here instead,
-- by statement-level triggers in the same transaction as the attempts they
-- count, exact for every reader, a window read being at most 25 hours x 64
-- shards of rows (tables/accepted-hours.ts).
--
-- As in email_outbox_counts (0012): each hour has a row per shard, a
-- statement writes only its backend's shard (pg_backend_pid() % 64), and a
-- reader sums the shards.
CREATE TABLE email_accepted_hours (
  hour  timestamptz NOT NULL,
  shard integer     NOT NULL,
  n     bigint      NOT NULL,
  PRIMARY KEY (hour, shard),
  CONSTRAINT email_accepted_hours_whole_hour CHECK (hour = date_trunc('hour', hour, 'UTC'))
) WITH (fillfactor = 50); -- room on the page for HOT updates: n is not indexed

-- One function for the three triggers (transition tables need single-event
-- triggers). Only attempts finished within the last two days count: no
-- window reaches further back, so backdated rows (an import, a prune of old
-- history) never touch an hour a window reads, and each statement deletes
-- its shard's hours older than that, which keeps the table about two days
-- long. Hours are written in ascending order, so two statements on one
-- shard lock its rows in the same order.
CREATE FUNCTION email_attempts_accepted_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  hours timestamptz[];
  deltas bigint[];
  horizon constant timestamptz := now() - interval '2 days';
BEGIN
  -- Each branch names only the transition tables its event has.
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(h ORDER BY h), array_agg(d ORDER BY h) INTO hours, deltas
      FROM (SELECT date_trunc('hour', finished_at, 'UTC') AS h, count(*) AS d
              FROM new_rows WHERE outcome = 'accepted' AND finished_at >= horizon GROUP BY 1) c;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(h ORDER BY h), array_agg(d ORDER BY h) INTO hours, deltas
      FROM (SELECT date_trunc('hour', finished_at, 'UTC') AS h, -count(*) AS d
              FROM old_rows WHERE outcome = 'accepted' AND finished_at >= horizon GROUP BY 1) c;
  ELSE
    SELECT array_agg(h ORDER BY h), array_agg(d ORDER BY h) INTO hours, deltas
      FROM (SELECT h, sum(d) AS d
              FROM (SELECT date_trunc('hour', finished_at, 'UTC') AS h, 1 AS d
                      FROM new_rows WHERE outcome = 'accepted' AND finished_at >= horizon
                    UNION ALL
                    SELECT date_trunc('hour', finished_at, 'UTC'), -1
                      FROM old_rows WHERE outcome = 'accepted' AND finished_at >= horizon) u
             GROUP BY h HAVING sum(d) <> 0) c;
  END IF;
  IF hours IS NULL THEN
    RETURN NULL; -- a lease, an unaccepted result, an erasure: nothing to count
  END IF;
  FOR i IN 1 .. array_length(hours, 1) LOOP
    INSERT INTO email_accepted_hours AS a (hour, shard, n) VALUES (hours[i], pg_backend_pid() % 64, deltas[i])
      ON CONFLICT (hour, shard) DO UPDATE SET n = a.n + excluded.n;
  END LOOP;
  DELETE FROM email_accepted_hours WHERE hour < date_trunc('hour', horizon, 'UTC') AND shard = pg_backend_pid() % 64;
  RETURN NULL;
END
$$;

-- Seed from the attempts already there (the migration's transaction holds
-- the table's lock from here on: the triggers below see every later change).
LOCK TABLE email_attempts IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO email_accepted_hours (hour, shard, n)
SELECT date_trunc('hour', finished_at, 'UTC'), 0, count(*)
  FROM email_attempts
 WHERE outcome = 'accepted' AND finished_at >= now() - interval '2 days'
 GROUP BY 1;

CREATE TRIGGER email_attempts_accepted_inserts
  AFTER INSERT ON email_attempts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_attempts_accepted_changes();
CREATE TRIGGER email_attempts_accepted_updates
  AFTER UPDATE ON email_attempts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_attempts_accepted_changes();
CREATE TRIGGER email_attempts_accepted_deletes
  AFTER DELETE ON email_attempts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION email_attempts_accepted_changes();

-- TRUNCATE (directly or cascaded from the outbox) empties the attempts.
CREATE FUNCTION email_attempts_accepted_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
  DELETE FROM email_accepted_hours;
  RETURN NULL;
END
$$;

CREATE TRIGGER email_attempts_accepted_truncates
  AFTER TRUNCATE ON email_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION email_attempts_accepted_truncate();
