-- The rendered message of an intent, written once, at its first lease, and
-- sent as stored by every later attempt: the same subject, bodies, sender
-- and headers byte for byte (invariant 11), even when the templates change
-- while the intent is retried. Only `replay` deletes it, so the next send
-- renders again from the templates of that moment. Rows go with their intent.
CREATE TABLE email_messages (
  intent_id        text        PRIMARY KEY REFERENCES email_outbox (id) ON DELETE CASCADE,
  subject          text        NOT NULL,
  text_body        text        NOT NULL,
  html_body        text        NOT NULL,
  from_address     text        NOT NULL,
  reply_to         text,
  headers          jsonb       NOT NULL DEFAULT '{}',
  template         text        NOT NULL,
  -- The template directory used (`de`) and the locale and zone the times
  -- were formatted in (`de-CH`, `Europe/Zurich`).
  template_locale  text        NOT NULL,
  locale           text        NOT NULL,
  time_zone        text        NOT NULL,
  -- Hash of the template files that produced it: tells which edit a message saw.
  template_version text        NOT NULL,
  rendered_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT email_messages_headers_object CHECK (jsonb_typeof(headers) = 'object'),
  CONSTRAINT email_messages_subject_nonempty CHECK (subject <> '')
);
