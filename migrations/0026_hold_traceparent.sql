-- OpenTelemetry: the W3C traceparent of the span a hold was created in
-- (createHold reads the active span; POST /v1/holds its `traceparent`
-- header). The expiry, lease, send, record and provider-event spans of the
-- hold link to it, so one hold can be followed from the request that
-- created it to its email's delivery across processes and minutes
-- (src/observability/tracing.ts).
--
-- A nullable column with no default: a catalogue change only, no rewrite
-- of the table. The CHECK is added NOT VALID (every existing row is NULL,
-- so there is nothing to scan) and holds for every row written from now on.
-- Not personal data: ids of a trace, never an address or a body.
ALTER TABLE support_reservations ADD COLUMN traceparent text;
ALTER TABLE support_reservations ADD CONSTRAINT support_reservations_traceparent
  CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$') NOT VALID;
