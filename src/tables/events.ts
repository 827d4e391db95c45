import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { windowStartSql } from './accepted-hours.js';
import type { BounceType, EmailEvent, EventKind, ProviderEvent } from '../model/event-kinds.js';

/** Every statement on the `email_events` table. One statement per batch; values always as parameters. */

export interface InsertedEvent {
  /** Index of the event in the batch given to eventsInsert. */
  ord: number;
  intent_id: string | null;
  hold_id: string | null;
  /** The matched intent's recipient, for suppression when the payload names none; never logged. */
  recipient: string | null;
  /** The matched hold's stored W3C traceparent (migration 0026), for the ingest span's link; never logged. */
  traceparent: string | null;
}

/**
 * Store a batch of events idempotently: an event already stored (same
 * provider and provider event id: the provider sent it again) is skipped.
 * Each is matched to its intent by the provider's message id, the receipt
 * of an accepted attempt; none matching is kept with intent_id NULL.
 * Returns the events that were new.
 */
export async function eventsInsert(db: Queryable, schema: string, events: ProviderEvent[]): Promise<InsertedEvent[]> {
  if (events.length === 0) return [];
  const s = ident(schema);
  const col = <T>(read: (e: ProviderEvent) => T) => events.map(read);
  const { rows } = await db.query<InsertedEvent>(
    `WITH e AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
                WITH ORDINALITY AS e(provider, event_id, message_id, kind, bounce_type, provider_type, reason, occurred_at, ord)
     ), matched AS (
       SELECT e.*, (SELECT a.intent_id FROM ${s}.email_attempts a
                     WHERE a.receipt = e.message_id ORDER BY a.started_at DESC LIMIT 1) AS intent_id
         FROM e
     ), inserted AS (
       INSERT INTO ${s}.email_events
              (provider, provider_event_id, provider_message_id, intent_id, kind, bounce_type, provider_type, reason, occurred_at)
       SELECT provider, event_id, message_id, intent_id, kind, bounce_type, provider_type, reason, occurred_at
         FROM matched ORDER BY ord
       ON CONFLICT (provider, provider_event_id) DO NOTHING
       RETURNING provider, provider_event_id, intent_id
     )
     SELECT (min(m.ord) - 1)::int AS ord, i.intent_id, o.reservation_id AS hold_id, o.recipient, r.traceparent
       FROM inserted i
       JOIN matched m ON m.provider = i.provider AND m.event_id = i.provider_event_id
       LEFT JOIN ${s}.email_outbox o ON o.id = i.intent_id
       LEFT JOIN ${s}.support_reservations r ON r.id = o.reservation_id
      GROUP BY i.provider, i.provider_event_id, i.intent_id, o.reservation_id, o.recipient, r.traceparent
      ORDER BY 1`,
    [
      col((e) => e.provider),
      col((e) => e.providerEventId),
      col((e) => e.messageId),
      col((e) => e.kind),
      col((e) => e.bounceType),
      col((e) => e.providerType),
      col((e) => e.reason),
      col((e) => e.occurredAt),
    ],
  );
  return rows;
}

interface EventRow {
  provider: string;
  provider_event_id: string;
  provider_message_id: string;
  intent_id: string | null;
  kind: EventKind;
  bounce_type: BounceType | null;
  provider_type: string | null;
  reason: string | null;
  occurred_at: Date;
  received_at: Date;
}

function fromRow(row: EventRow): EmailEvent {
  return {
    provider: row.provider,
    providerEventId: row.provider_event_id,
    messageId: row.provider_message_id,
    intentId: row.intent_id,
    kind: row.kind,
    bounceType: row.bounce_type,
    providerType: row.provider_type,
    reason: row.reason,
    occurredAt: row.occurred_at,
    receivedAt: row.received_at,
  };
}

/**
 * An intent's events in the provider's order: those matched at arrival, and
 * those that arrived before the receipt was recorded (matched now by the
 * receipts of its attempts).
 */
export async function eventsForIntent(db: Queryable, schema: string, intentId: string): Promise<EmailEvent[]> {
  const s = ident(schema);
  const { rows } = await db.query<EventRow>(
    `SELECT provider, provider_event_id, provider_message_id, coalesce(intent_id, $1) AS intent_id, kind, bounce_type,
            provider_type, reason, occurred_at, received_at
       FROM ${s}.email_events
      WHERE intent_id = $1
         OR provider_message_id = ANY (ARRAY(SELECT a.receipt FROM ${s}.email_attempts a WHERE a.intent_id = $1 AND a.receipt IS NOT NULL))
      ORDER BY occurred_at, id`,
    [intentId],
  );
  return rows.map(fromRow);
}

/**
 * Hard bounces and complaints in the window of `hours` whole UTC hours (the
 * window of tables/accepted-hours.ts, which counts the sends they are rates
 * of): two index-only counts, each through the partial index that holds
 * exactly the rows it counts (migration 0014), so the cost follows the
 * window's bounces and complaints, not the history behind them. One row
 * (`hardBounces`, `complaints`), which the reputation gauges
 * (read/event-metrics.ts) read beside the sends of the same window.
 */
export const eventsWindowSql = (s: string, hoursParam: string): string => {
  const since = windowStartSql(hoursParam);
  return `SELECT (SELECT count(*)::int FROM ${s}.email_events
                   WHERE kind = 'bounced' AND bounce_type = 'hard' AND occurred_at >= ${since}) AS "hardBounces",
                 (SELECT count(*)::int FROM ${s}.email_events WHERE kind = 'complained' AND occurred_at >= ${since}) AS complaints`;
};

