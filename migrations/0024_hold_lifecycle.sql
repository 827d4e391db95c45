-- The hold's whole life: extending it, a reminder before it expires, a
-- confirmation email, and emails that know their deadline.
--
-- 1. A hold may now have several intents, one per kind, each with a
--    deterministic id (`<kind>:<hold id>`): `reservation-expired`,
--    `reservation-reminder` (due remind_before_seconds before expires_at),
--    `reservation-confirmed`. The one-intent-per-hold UNIQUE becomes one
--    intent per hold and kind; lookups by hold use its leading column.
CREATE UNIQUE INDEX email_outbox_hold_kind ON email_outbox (reservation_id, template);
ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_reservation_id_key;

-- 2. Deadlines. `send_by`, when set, is the moment after which the email is
--    not worth sending (a reminder's is its hold's expiry): the lease never
--    takes an intent past it, and the delivery lane's sweep ends such an
--    intent as `missed_deadline`. `voided`: a reminder whose hold was
--    confirmed or cancelled before it went out. Both are terminal, never
--    sent. The CHECKs are replaced NOT VALID (every existing row passes the
--    old, narrower one), so nothing is scanned.
ALTER TABLE email_outbox
  ADD COLUMN send_by timestamptz,
  DROP CONSTRAINT email_outbox_state,
  ADD CONSTRAINT email_outbox_state
    CHECK (state IN ('pending', 'sent', 'rejected', 'dead', 'voided', 'missed_deadline')) NOT VALID;
CREATE INDEX email_outbox_deadline ON email_outbox (send_by) WHERE state = 'pending' AND send_by IS NOT NULL;

ALTER TABLE email_outbox_counts
  DROP CONSTRAINT email_outbox_counts_state,
  ADD CONSTRAINT email_outbox_counts_state
    CHECK (state IN ('pending', 'sent', 'rejected', 'dead', 'voided', 'missed_deadline'));
-- The count triggers only ever UPDATE: every state has its shard rows.
INSERT INTO email_outbox_counts (state, shard)
SELECT st, sh FROM unnest(ARRAY['voided', 'missed_deadline']) AS st, generate_series(0, 63) AS sh;

-- 3. What a hold asks for beyond its expiry email.
ALTER TABLE support_reservations
  ADD COLUMN remind_before_seconds integer,
  ADD COLUMN notify_on_confirm boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT support_reservations_remind_before
    CHECK (remind_before_seconds IS NULL OR remind_before_seconds BETWEEN 1 AND 2592000);

-- 4. Each extension of a hold, for its timeline. Deleted with the hold.
CREATE TABLE hold_extensions (
  hold_id         text        NOT NULL REFERENCES support_reservations (id) ON DELETE CASCADE,
  extended_at     timestamptz NOT NULL,
  from_expires_at timestamptz NOT NULL,
  to_expires_at   timestamptz NOT NULL,
  PRIMARY KEY (hold_id, to_expires_at),
  CONSTRAINT hold_extensions_later CHECK (to_expires_at > from_expires_at)
);

-- 5. A hold's reminder, written where a hold asks for one and its deadline
--    leaves a moment before it to send it: by create_hold and by the
--    library's createHold (src/tables/holds.ts holdsInsert) when the hold is
--    created, by extend_hold_ when an extension leaves room for a reminder
--    the creation had to skip. Due remind_before_seconds before expiry, its
--    deadline the expiry. Returns whether it wrote one.
CREATE FUNCTION reminder_write_(hold support_reservations, acted_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  remind_at timestamptz := hold.expires_at - make_interval(secs => hold.remind_before_seconds);
BEGIN
  IF hold.remind_before_seconds IS NULL OR remind_at <= acted_at THEN
    RETURN false;
  END IF;
  INSERT INTO email_outbox AS o (id, reservation_id, tenant, recipient, template, state, available_at, created_at, send_by)
  VALUES ('reservation-reminder:' || hold.id, hold.id, hold.tenant, hold.customer_email, 'reservation-reminder', 'pending',
          remind_at, remind_at, hold.expires_at)
  ON CONFLICT (id) DO NOTHING;
  RETURN FOUND;
END
$$;

-- 6. The SQL entry points. create_hold gets ttl_seconds (so that running
--    the same call again in a new transaction is the same hold: the
--    request is "60 s from creation", not an instant that moves with now()),
--    every argument a default (so `id` may be left out rather than passed
--    NULL), and the reminder and confirmation choices. As in 0020, the old
--    function is dropped and its privileges granted again on the new one.
SELECT set_config('leasehold.create_hold_acl', coalesce(p.proacl::text, ''), true)
  FROM pg_proc p
 WHERE p.oid = 'create_hold(text, text, timestamptz, jsonb, text)'::regprocedure;

DROP FUNCTION create_hold(text, text, timestamptz, jsonb, text);

CREATE FUNCTION create_hold(
  id text DEFAULT NULL,
  customer_email text DEFAULT NULL,
  expires_at timestamptz DEFAULT NULL,
  metadata jsonb DEFAULT '{}'::jsonb,
  tenant text DEFAULT '',
  ttl_seconds integer DEFAULT NULL,
  remind_before_seconds integer DEFAULT NULL,
  notify_on_confirm boolean DEFAULT false
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
  notify boolean := coalesce(create_hold.notify_on_confirm, false);
  deadline timestamptz;
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
  IF create_hold.expires_at IS NULL AND create_hold.ttl_seconds IS NULL THEN
    RAISE EXCEPTION 'expires_at: is required (or give ttl_seconds)' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.expires_at IS NOT NULL AND create_hold.ttl_seconds IS NOT NULL THEN
    RAISE EXCEPTION 'expires_at: give exactly one of expires_at and ttl_seconds' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.expires_at IN ('infinity', '-infinity') THEN
    RAISE EXCEPTION 'expires_at: must be a finite time' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF create_hold.ttl_seconds NOT BETWEEN 1 AND 2592000 THEN
    RAISE EXCEPTION 'ttl_seconds: must be 1-2592000 (30 days)' USING ERRCODE = '22023', COLUMN = 'ttl_seconds';
  END IF;
  IF create_hold.remind_before_seconds NOT BETWEEN 1 AND 2592000 THEN
    RAISE EXCEPTION 'remind_before_seconds: must be 1-2592000 (30 days)' USING ERRCODE = '22023', COLUMN = 'remind_before_seconds';
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

  -- The fingerprint of 0011 (hold_request_hash): an instant, or a ttl. The
  -- tenant, reminder and confirmation choices are compared beside it.
  fingerprint := hold_request_hash(create_hold.customer_email, create_hold.expires_at, create_hold.ttl_seconds, meta);

  -- Idempotency is decided before the clock, as in createHold.
  IF create_hold.id IS NOT NULL THEN
    SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
    IF FOUND THEN
      IF hold.request_hash IS DISTINCT FROM fingerprint OR hold.tenant <> hold_tenant
         OR hold.remind_before_seconds IS DISTINCT FROM create_hold.remind_before_seconds OR hold.notify_on_confirm <> notify THEN
        RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
          USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
      END IF;
      RETURN hold;
    END IF;
  END IF;

  deadline := coalesce(create_hold.expires_at, now() + make_interval(secs => create_hold.ttl_seconds));
  IF deadline <= now() THEN
    RAISE EXCEPTION 'expires_at: must be in the future' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF deadline > now() + interval '30 days' THEN
    RAISE EXCEPTION 'expires_at: must be within 30 days' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;

  INSERT INTO support_reservations AS r
    (id, customer_email, status, expires_at, metadata, request_hash, tenant, remind_before_seconds, notify_on_confirm)
  VALUES (hold_id, create_hold.customer_email, 'held', deadline, meta, fingerprint, hold_tenant,
          create_hold.remind_before_seconds, notify)
  ON CONFLICT (id) DO NOTHING
  RETURNING * INTO hold;
  IF FOUND THEN
    -- The reminder, when there is still a moment before the deadline to send
    -- it (the same rule as createHold's holdsInsert).
    PERFORM reminder_write_(hold, now());
    RETURN hold;
  END IF;
  -- A concurrent create of the same id committed first.
  SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id;
  IF FOUND AND hold.request_hash = fingerprint AND hold.tenant = hold_tenant
     AND hold.remind_before_seconds IS NOT DISTINCT FROM create_hold.remind_before_seconds AND hold.notify_on_confirm = notify THEN
    RETURN hold;
  END IF;
  RAISE EXCEPTION 'id: hold "%" already exists with different content', hold_id
    USING ERRCODE = '23505', COLUMN = 'id', CONSTRAINT = 'support_reservations_pkey';
END
$$;

COMMENT ON FUNCTION create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean) IS
  'Create a hold (leasehold). Validation errors: SQLSTATE 22023, message "<field>: ..."; same id with other content: 23505. See README "From any language".';

DO $$
DECLARE
  acl text := current_setting('leasehold.create_hold_acl', true);
  entry record;
BEGIN
  IF coalesce(acl, '') = '' THEN
    RETURN;
  END IF;
  REVOKE ALL ON FUNCTION create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean) FROM PUBLIC;
  FOR entry IN SELECT * FROM aclexplode(acl::aclitem[]) LOOP
    EXECUTE format('GRANT %s ON FUNCTION create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean) TO %s%s',
      entry.privilege_type,
      CASE WHEN entry.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(entry.grantee)) END,
      CASE WHEN entry.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$$;

-- confirm_hold, cancel_hold and extend_hold, for callers without the
-- library. The work is in settle_hold_ and extend_hold_, which take the
-- moment to act at: the public functions pass now(), and the library
-- (src/tables/holds.ts) calls them too, with its clock, so both paths are
-- one implementation. Each changes a hold only while it is held, under its
-- row lock, so against the expiry worker exactly one wins. The public
-- functions raise P0002 (no_data_found) for an unknown id and 55000
-- (object_not_in_prerequisite_state) for a hold that is no longer held;
-- the internal ones return NULL instead and the library tells the two apart
-- (an error raised after waiting on the row lock costs the loser of a race
-- tens of milliseconds, measured: 1,000 confirm-vs-expire races took 30 s
-- that way and 0.6 s this way).
--
-- Settling voids the hold's pending reminder that no lease holds (one in
-- flight goes out; its deadline becomes now, so if it comes back unsent, or
-- its worker died, the delivery lane's sweep voids it) and, for a confirmation the hold asked for, writes the
-- `reservation-confirmed` intent, due at once, with the notice deadline.
CREATE FUNCTION settle_hold_(hold_id text, to_status text, notice_deadline_seconds integer, acted_at timestamptz)
RETURNS support_reservations
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  hold support_reservations;
BEGIN
  UPDATE support_reservations r
     SET status = to_status,
         confirmed_at = CASE WHEN to_status = 'confirmed' THEN acted_at ELSE r.confirmed_at END,
         cancelled_at = CASE WHEN to_status = 'cancelled' THEN acted_at ELSE r.cancelled_at END
   WHERE r.id = hold_id AND r.status = 'held'
  RETURNING * INTO hold;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  -- Only a hold that asked for a reminder has one: the rest settle with no statement on the outbox.
  IF hold.remind_before_seconds IS NOT NULL THEN
    UPDATE email_outbox o
       SET state = 'voided', finished_at = acted_at, last_error = 'its hold was ' || to_status || ' first'
     WHERE o.reservation_id = hold.id AND o.template = 'reservation-reminder' AND o.state = 'pending'
       AND o.lease_token IS NULL AND o.batch_id IS NULL;
    -- One under a lease may be in flight and go out; if it comes back unsent (or its
    -- worker died), its deadline has passed and the sweep voids it, closing the attempt.
    UPDATE email_outbox o SET send_by = least(o.send_by, acted_at)
     WHERE o.reservation_id = hold.id AND o.template = 'reservation-reminder' AND o.state = 'pending';
  END IF;
  IF to_status = 'confirmed' AND hold.notify_on_confirm THEN
    INSERT INTO email_outbox AS o (id, reservation_id, tenant, recipient, template, state, available_at, created_at, send_by)
    VALUES ('reservation-confirmed:' || hold.id, hold.id, hold.tenant, hold.customer_email, 'reservation-confirmed', 'pending',
            acted_at, acted_at, acted_at + make_interval(secs => notice_deadline_seconds))
    ON CONFLICT (id) DO NOTHING;
  END IF;
  RETURN hold;
END
$$;

-- What the public functions answer when the internal one changed nothing.
CREATE FUNCTION held_or_raise_(changed support_reservations, hold_id text)
RETURNS support_reservations
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  current_status text;
BEGIN
  IF changed.id IS NOT NULL THEN
    RETURN changed;
  END IF;
  SELECT r.status INTO current_status FROM support_reservations r WHERE r.id = hold_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'id: no hold "%"', hold_id USING ERRCODE = 'P0002', COLUMN = 'id';
  END IF;
  RAISE EXCEPTION 'id: hold "%" is %, not held', hold_id, current_status USING ERRCODE = '55000', COLUMN = 'id';
END
$$;

CREATE FUNCTION confirm_hold(id text, notice_deadline_seconds integer DEFAULT NULL)
RETURNS support_reservations LANGUAGE sql VOLATILE SET search_path FROM CURRENT
AS $$ SELECT held_or_raise_(settle_hold_(confirm_hold.id, 'confirmed', confirm_hold.notice_deadline_seconds, now()), confirm_hold.id) $$;

CREATE FUNCTION cancel_hold(id text)
RETURNS support_reservations LANGUAGE sql VOLATILE SET search_path FROM CURRENT
AS $$ SELECT held_or_raise_(settle_hold_(cancel_hold.id, 'cancelled', NULL, now()), cancel_hold.id) $$;

-- Extending moves the deadline later (the same deadline again is a no-op,
-- so a retry is safe; an earlier one is refused), records the extension,
-- and moves the pending reminder that no lease holds to the new time,
-- dropping its stored rendering, which names the old deadline. A hold
-- whose reminder was skipped at creation (no moment left before the
-- deadline) gets one now, if the new deadline leaves one.
CREATE FUNCTION extend_hold_(hold_id text, new_expires_at timestamptz, new_ttl_seconds integer, acted_at timestamptz)
RETURNS support_reservations
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  hold support_reservations;
  deadline timestamptz;
  remind_at timestamptz;
BEGIN
  IF (new_expires_at IS NULL) = (new_ttl_seconds IS NULL) THEN
    RAISE EXCEPTION 'expires_at: give exactly one of expires_at and ttl_seconds' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  IF new_ttl_seconds NOT BETWEEN 1 AND 2592000 THEN
    RAISE EXCEPTION 'ttl_seconds: must be 1-2592000 (30 days)' USING ERRCODE = '22023', COLUMN = 'ttl_seconds';
  END IF;
  deadline := coalesce(new_expires_at, acted_at + make_interval(secs => new_ttl_seconds));
  IF deadline IN ('infinity', '-infinity') OR deadline > acted_at + interval '30 days' THEN
    RAISE EXCEPTION 'expires_at: must be within 30 days' USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  SELECT * INTO hold FROM support_reservations r WHERE r.id = hold_id FOR UPDATE;
  IF NOT FOUND OR hold.status <> 'held' THEN
    RETURN NULL;
  END IF;
  IF hold.expires_at = deadline THEN
    RETURN hold;
  END IF;
  IF deadline < hold.expires_at THEN
    RAISE EXCEPTION 'expires_at: must be after the hold''s current expires_at (%)', hold.expires_at
      USING ERRCODE = '22023', COLUMN = 'expires_at';
  END IF;
  INSERT INTO hold_extensions (hold_id, extended_at, from_expires_at, to_expires_at) VALUES (hold.id, acted_at, hold.expires_at, deadline);
  UPDATE support_reservations r SET expires_at = deadline WHERE r.id = hold.id RETURNING * INTO hold;
  IF hold.remind_before_seconds IS NOT NULL THEN
    remind_at := deadline - make_interval(secs => hold.remind_before_seconds);
    DELETE FROM email_messages m USING email_outbox o
     WHERE m.intent_id = o.id AND o.reservation_id = hold.id AND o.template = 'reservation-reminder'
       AND o.state = 'pending' AND o.lease_token IS NULL AND o.batch_id IS NULL;
    UPDATE email_outbox o
       SET available_at = greatest(acted_at, remind_at), created_at = greatest(acted_at, remind_at), send_by = deadline
     WHERE o.reservation_id = hold.id AND o.template = 'reservation-reminder' AND o.state = 'pending'
       AND o.lease_token IS NULL AND o.batch_id IS NULL;
    IF NOT FOUND THEN
      PERFORM reminder_write_(hold, acted_at);
    END IF;
  END IF;
  RETURN hold;
END
$$;

CREATE FUNCTION extend_hold(id text, expires_at timestamptz DEFAULT NULL, ttl_seconds integer DEFAULT NULL)
RETURNS support_reservations LANGUAGE sql VOLATILE SET search_path FROM CURRENT
AS $$ SELECT held_or_raise_(extend_hold_(extend_hold.id, extend_hold.expires_at, extend_hold.ttl_seconds, now()), extend_hold.id) $$;
