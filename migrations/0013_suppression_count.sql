-- The number of suppressed addresses without counting the list (issue 10):
-- leasehold_suppressions was SELECT count(*) FROM suppressions on every
-- scrape, a scan of a table that only grows (retention erases addresses
-- but keeps the rows). Kept exact by statement-level triggers in the same
-- transaction as the rows, sharded by backend like email_outbox_counts
-- (0012), so webhook ingests adding suppressions at once do not queue on
-- one row. A reader sums the 64 rows (tables/suppression-count.ts).
CREATE TABLE suppression_count (
  shard integer PRIMARY KEY,
  n     bigint  NOT NULL DEFAULT 0
) WITH (fillfactor = 50);

INSERT INTO suppression_count (shard) SELECT generate_series(0, 63);

LOCK TABLE suppressions IN SHARE ROW EXCLUSIVE MODE;
UPDATE suppression_count SET n = (SELECT count(*) FROM suppressions) WHERE shard = 0;

-- Only inserts and deletes change the number (an upsert's update half and
-- an erasure are UPDATEs: no trigger needed for them).
CREATE FUNCTION suppression_count_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
  d bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO d FROM new_rows;
  ELSE
    SELECT -count(*) INTO d FROM old_rows;
  END IF;
  IF d <> 0 THEN
    UPDATE suppression_count SET n = n + d WHERE shard = pg_backend_pid() % 64;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER suppression_count_inserts
  AFTER INSERT ON suppressions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION suppression_count_changes();
CREATE TRIGGER suppression_count_deletes
  AFTER DELETE ON suppressions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION suppression_count_changes();

CREATE FUNCTION suppression_count_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
  UPDATE suppression_count SET n = 0 WHERE n <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER suppression_count_truncates
  AFTER TRUNCATE ON suppressions
  FOR EACH STATEMENT EXECUTE FUNCTION suppression_count_truncate();
