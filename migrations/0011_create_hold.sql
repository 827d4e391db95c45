-- The SQL entry point (issue 15): an application in any language creates a
-- hold inside its own transaction with
--   SELECT * FROM <schema>.create_hold(id, customer_email, expires_at, metadata);
-- or with a plain INSERT of the contract columns. The functions below are
-- created in the migrated schema and pinned to it (SET search_path FROM
-- CURRENT captures the migrator's search_path, which is that schema alone),
-- so they work whatever the caller's search_path is.

-- The request fingerprint stored in request_hash, shared by every entry
-- point: createHold (TypeScript) passes ttl_seconds for a ttlSeconds request
-- and NULL otherwise, create_hold and plain INSERTs pass NULL. The instant is
-- written in UTC to the millisecond (what a JavaScript Date carries), so the
-- same moment in another zone or session TimeZone is the same request, and
-- metadata is compared as jsonb (key order and whitespace do not matter).
-- Rows created before this migration keep the older TypeScript-only hash,
-- which createHold still recognises.
CREATE FUNCTION hold_request_hash(customer_email text, expires_at timestamptz, ttl_seconds integer, metadata jsonb)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT 'v2:' || encode(sha256(convert_to(jsonb_build_array(
    customer_email,
    to_char(date_trunc('milliseconds', expires_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    ttl_seconds,
    metadata)::text, 'UTF8')), 'hex')
$$;

-- A plain INSERT that leaves request_hash out gets the fingerprint of what it
-- inserted (NOT NULL is checked after BEFORE triggers), so it never fails on
-- this internal column and a later create_hold with the same content is
-- recognised as the same request. A second plain INSERT of the same id fails
-- on the primary key (23505), as any INSERT would.
CREATE FUNCTION support_reservations_fill_request_hash() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
  NEW.request_hash := hold_request_hash(NEW.customer_email, NEW.expires_at, NULL, NEW.metadata);
  RETURN NEW;
END
$$;

CREATE TRIGGER support_reservations_request_hash
  BEFORE INSERT ON support_reservations
  FOR EACH ROW WHEN (NEW.request_hash IS NULL)
  EXECUTE FUNCTION support_reservations_fill_request_hash();

-- create_hold applies the rules of src/holds/validate.ts (the HTTP API's and
-- the library's) and raises SQLSTATE 22023 (invalid_parameter_value) with a
-- message starting with the field's name, which is also in the error's
-- COLUMN field. Idempotent like the API: with an id, the same request again
-- returns the existing hold (even after its expires_at passed: a retry of a
-- lost answer is not a new request), another request raises 23505 naming
-- the constraint support_reservations_pkey. Without an id one is generated
-- (hold_<uuid>) and every call creates a hold.
CREATE FUNCTION create_hold(
  id text,
  customer_email text,
  expires_at timestamptz,
  metadata jsonb DEFAULT '{}'::jsonb
) RETURNS support_reservations
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
  hold_id text := coalesce(create_hold.id, 'hold_' || gen_random_uuid()::text);
  meta jsonb := coalesce(create_hold.metadata, '{}'::jsonb);
  fingerprint text;
  hold support_reservations;
BEGIN
  IF hold_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
    RAISE EXCEPTION 'id: must be 1-128 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit'
      USING ERRCODE = '22023', COLUMN = 'id';
  END IF;
  IF create_hold.customer_email IS NULL THEN
    RAISE EXCEPTION 'customer_email: is required' USING ERRCODE = '22023', COLUMN = 'customer_email';
  END IF;
  IF length(create_hold.customer_email) > 254 THEN
    RAISE EXCEPTION 'customer_email: must be at most 254 characters' USING ERRCODE = '22023', COLUMN = 'customer_email';
  END IF;
  -- The pattern zod's z.email() applies (src/holds/validate.ts).
  IF create_hold.customer_email !~ '^([A-Za-z0-9_''+-]+\.)*[A-Za-z0-9_''+-]*[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$' THEN
    RAISE EXCEPTION 'customer_email: must be an email address' USING ERRCODE = '22023', COLUMN = 'customer_email';
  END IF;
  IF create_hold.expires_at IS NULL THEN
    RAISE EXCEPTION 'expires_at: is required' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.expires_at IN ('infinity', '-infinity') THEN
    RAISE EXCEPTION 'expires_at: must be a finite time' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF jsonb_typeof(meta) <> 'object' THEN
    RAISE EXCEPTION 'metadata: must be a JSON object' USING ERRCODE = '22023', COLUMN = 'metadata';
  END IF;
  -- 16 KiB like the API, measured on jsonb's text form (which has a space
  -- after each ":" and ","), so slightly stricter than JSON.stringify.
  IF octet_length(meta::text) > 16384 THEN
    RAISE EXCEPTION 'metadata: must be at most 16384 bytes as JSON' USING ERRCODE = '22023', COLUMN = 'metadata';
  END IF;
  -- The API's MAX_JSON_DEPTH: no object or array nested 32 levels below the top.
  IF jsonb_path_exists(meta, 'lax $.**{32 to last} ? (@.type() == "object" || @.type() == "array")') THEN
    RAISE EXCEPTION 'metadata: must not be nested more than 32 levels deep' USING ERRCODE = '22023', COLUMN = 'metadata';
  END IF;

  fingerprint := hold_request_hash(create_hold.customer_email, create_hold.expires_at, NULL, meta);

  -- Idempotency is decided before the clock, as in createHold.
  IF create_hold.id IS NOT NULL THEN
    SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
    IF FOUND THEN
      IF hold.request_hash IS DISTINCT FROM fingerprint THEN
        RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
          USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
      END IF;
      RETURN hold;
    END IF;
  END IF;

  -- now(): the transaction's start, the same instant created_at gets.
  IF create_hold.expires_at <= now() THEN
    RAISE EXCEPTION 'expires_at: must be in the future' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.expires_at > now() + interval '30 days' THEN
    RAISE EXCEPTION 'expires_at: must be within 30 days' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;

  INSERT INTO support_reservations AS r (id, customer_email, status, expires_at, metadata, request_hash)
  VALUES (hold_id, create_hold.customer_email, 'held', create_hold.expires_at, meta, fingerprint)
  ON CONFLICT (id) DO NOTHING
  RETURNING * INTO hold;
  IF FOUND THEN
    RETURN hold;
  END IF;
  -- A concurrent create of the same id committed first.
  SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
  IF FOUND AND hold.request_hash = fingerprint THEN
    RETURN hold;
  END IF;
  RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
    USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
END
$$;

COMMENT ON FUNCTION create_hold(text, text, timestamptz, jsonb) IS
  'Create a hold (leasehold). Validation errors: SQLSTATE 22023, message "<field>: ..."; same id with other content: 23505. See README "From any language".';

-- GET /v1/holds lists newest first, keyset-paged on (created_at, id)
-- (holdsList in src/holds/queries.ts); read backwards, this index serves
-- every page without sorting the table. IF NOT EXISTS: on a large table,
-- build it beforehand with CREATE INDEX CONCURRENTLY under this name.
CREATE INDEX IF NOT EXISTS support_reservations_created ON support_reservations (created_at, id);
