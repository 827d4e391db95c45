-- Tenants (issue 25, part 1): a backend serving many customers of its own
-- names whose hold it is. Every hold has a tenant, '' (the empty tenant)
-- unless it was created with one, and its intent carries the same tenant,
-- copied by the expiry lane's insert (intentsInsertExpired in
-- src/tables/outbox/lane.ts), so a fair lease can share an account's
-- permits among tenants from email_outbox alone.
--
-- A tenant follows the id rule (HOLD_ID_PATTERN, src/model/hold-input.ts),
-- or is ''. Adding a NOT NULL column with a constant default is instant on
-- PostgreSQL 11 and later: the default is kept in the catalog and read for
-- the existing rows, nothing is rewritten. The CHECKs are NOT VALID so they
-- scan nothing either: every existing row has '' (which they allow), and
-- new and updated rows are checked as usual. So this migration holds its
-- locks for milliseconds, whatever the size of the tables.
ALTER TABLE support_reservations
  ADD COLUMN tenant text NOT NULL DEFAULT '',
  ADD CONSTRAINT support_reservations_tenant_format
    CHECK (tenant ~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$') NOT VALID;

ALTER TABLE email_outbox
  ADD COLUMN tenant text NOT NULL DEFAULT '',
  ADD CONSTRAINT email_outbox_tenant_format
    CHECK (tenant ~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$') NOT VALID;

-- create_hold gets a last, defaulted argument `tenant`. A new argument is a
-- new signature, and keeping the old function beside it would make every
-- call without a tenant ambiguous between the two, so the old one is
-- dropped and the new one created in this transaction: callers see one or
-- the other, never neither. Every existing call form keeps working
-- (positional with 3 or 4 arguments, named arguments in any order), and
-- `tenant => 'acme'` is the new one. Privileges granted on the old function
-- (an application role given EXECUTE after REVOKE ... FROM PUBLIC) would go
-- with it, so they are noted here and granted again on the new one below.
SELECT set_config('leasehold.create_hold_acl', coalesce(p.proacl::text, ''), true)
  FROM pg_proc p
 WHERE p.oid = 'create_hold(text, text, timestamptz, jsonb)'::regprocedure;

DROP FUNCTION create_hold(text, text, timestamptz, jsonb);

-- The rules of 0011 (see there), unchanged, and the tenant's: NULL is the
-- empty tenant, as NULL metadata is {}. The tenant is part of the request:
-- the same id with another tenant is another request (23505), like another
-- address. It is compared beside the fingerprint (request_hash), which stays
-- as 0011 computes it, so every hold created before this migration (all of
-- them the empty tenant's) still recognises its retries.
CREATE FUNCTION create_hold(
  id text,
  customer_email text,
  expires_at timestamptz,
  metadata jsonb DEFAULT '{}'::jsonb,
  tenant text DEFAULT ''
) RETURNS support_reservations
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
  hold_id text := coalesce(create_hold.id, 'hold_' || gen_random_uuid()::text);
  meta jsonb := coalesce(create_hold.metadata, '{}'::jsonb);
  hold_tenant text := coalesce(create_hold.tenant, '');
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
  -- The pattern zod's z.email() applies (src/model/hold-input.ts).
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
  IF octet_length(meta::text) > 16384 THEN
    RAISE EXCEPTION 'metadata: must be at most 16384 bytes as JSON' USING ERRCODE = '22023', COLUMN = 'metadata';
  END IF;
  IF jsonb_path_exists(meta, 'lax $.**{32 to last} ? (@.type() == "object" || @.type() == "array")') THEN
    RAISE EXCEPTION 'metadata: must not be nested more than 32 levels deep' USING ERRCODE = '22023', COLUMN = 'metadata';
  END IF;
  -- The id rule, or '' (TENANT_PATTERN, src/model/hold-input.ts).
  IF hold_tenant !~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$' THEN
    RAISE EXCEPTION 'tenant: must be empty or 1-128 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit'
      USING ERRCODE = '22023', COLUMN = 'tenant';
  END IF;

  fingerprint := hold_request_hash(create_hold.customer_email, create_hold.expires_at, NULL, meta);

  -- Idempotency is decided before the clock, as in createHold.
  IF create_hold.id IS NOT NULL THEN
    SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
    IF FOUND THEN
      IF hold.request_hash IS DISTINCT FROM fingerprint OR hold.tenant <> hold_tenant THEN
        RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
          USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
      END IF;
      RETURN hold;
    END IF;
  END IF;

  IF create_hold.expires_at <= now() THEN
    RAISE EXCEPTION 'expires_at: must be in the future' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.expires_at > now() + interval '30 days' THEN
    RAISE EXCEPTION 'expires_at: must be within 30 days' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;

  INSERT INTO support_reservations AS r (id, customer_email, status, expires_at, metadata, request_hash, tenant)
  VALUES (hold_id, create_hold.customer_email, 'held', create_hold.expires_at, meta, fingerprint, hold_tenant)
  ON CONFLICT (id) DO NOTHING
  RETURNING * INTO hold;
  IF FOUND THEN
    RETURN hold;
  END IF;
  -- A concurrent create of the same id committed first.
  SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
  IF FOUND AND hold.request_hash = fingerprint AND hold.tenant = hold_tenant THEN
    RETURN hold;
  END IF;
  RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
    USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
END
$$;

COMMENT ON FUNCTION create_hold(text, text, timestamptz, jsonb, text) IS
  'Create a hold (leasehold). Validation errors: SQLSTATE 22023, message "<field>: ..."; same id with other content: 23505. See README "From any language".';

-- The old function's privileges, granted again (nothing to do when it had
-- the defaults: EXECUTE for PUBLIC, which the new one has too).
DO $$
DECLARE
  acl text := current_setting('leasehold.create_hold_acl', true);
  entry record;
BEGIN
  IF coalesce(acl, '') = '' THEN
    RETURN;
  END IF;
  REVOKE ALL ON FUNCTION create_hold(text, text, timestamptz, jsonb, text) FROM PUBLIC;
  FOR entry IN SELECT * FROM aclexplode(acl::aclitem[]) LOOP
    EXECUTE format('GRANT %s ON FUNCTION create_hold(text, text, timestamptz, jsonb, text) TO %s%s',
      entry.privilege_type,
      CASE WHEN entry.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(entry.grantee)) END,
      CASE WHEN entry.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$$;
