-- create_hold's own checks of the id and the tenant, in the unbounded form
-- 0036 gave the table CHECKs: the same values refused with the same
-- errors, at about 0.4 microseconds instead of 7.7 for a 17-character id
-- (create_hold as a whole took about 83 microseconds a call on the
-- machine's PostgreSQL 15, so about a tenth of it went to this one test).
--
-- The function is 0024's, 150 lines; rather than a copy of all of them,
-- its definition as the server holds it (pg_get_functiondef, with its
-- settings, owner-independent) is read, the two tests are replaced word
-- for word, and the result is run. CREATE OR REPLACE keeps the function's
-- privileges. A function that is gone, or whose definition lacks either
-- test (changed by hand), is left as it is, with a notice: the old tests are
-- right, only slower.
DO $migration$
DECLARE
  fn constant regprocedure := to_regprocedure('create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean)');
  old_id constant text := $t$IF hold_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN$t$;
  new_id constant text := $t$IF hold_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' OR octet_length(hold_id) > 128 THEN$t$;
  old_tenant constant text := $t$IF hold_tenant !~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$' THEN$t$;
  new_tenant constant text := $t$IF NOT (hold_tenant = '' OR (hold_tenant ~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' AND octet_length(hold_tenant) <= 128)) THEN$t$;
  def text := CASE WHEN fn IS NOT NULL THEN pg_get_functiondef(fn) END;
BEGIN
  IF def IS NULL OR position(old_id IN def) = 0 OR position(old_tenant IN def) = 0 THEN
    RAISE NOTICE 'create_hold is not 0024''s: its id and tenant tests are left as they are';
    RETURN;
  END IF;
  EXECUTE replace(replace(def, old_id, new_id), old_tenant, new_tenant);
END
$migration$;
