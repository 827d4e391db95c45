import type pg from 'pg';
import { withTransaction } from '../db/pool.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { ATTR, inSpan, type Attributes } from '../observability/tracing.js';
import { looksLikeAddress, normalizeAddress } from '../model/address.js';
import { SuppressionReason } from '../model/suppression-reasons.js';
import { suppressionsAdd, type NewSuppression } from '../tables/suppressions.js';
import { eventsInsert } from '../tables/events.js';
import type { ProviderEvent } from '../model/event-kinds.js';

export interface IngestResult {
  /** Events in the request. */
  received: number;
  /** Events stored now (the rest had been stored before: the provider sent them again). */
  stored: number;
  duplicates: number;
  /** Stored events whose message id matched no accepted attempt (kept, intent_id NULL). */
  unmatched: number;
  /** Addresses newly suppressed by these events. */
  suppressed: number;
}

/**
 * The one ingestion path, for every webhook and the sandbox: store the
 * events (idempotently, matched to their intents) and, in the same
 * transaction, suppress the recipients of new hard bounces and complaints.
 * An event already stored suppresses nothing again, so an operator's
 * `suppressions remove` is not undone by a provider resending the event.
 */
export async function ingestEvents(
  pool: pg.Pool,
  schema: string,
  events: ProviderEvent[],
  options: { logger?: Logger; metrics?: Metrics } = {},
): Promise<IngestResult> {
  const logger = options.logger ?? silentLogger;
  if (events.length === 0) return { received: 0, stored: 0, duplicates: 0, unmatched: 0, suppressed: 0 };
  const started = new Date();
  const { inserted, suppressed } = await withTransaction(pool, async (client) => {
    const inserted = await eventsInsert(client, schema, events);
    const wanted: NewSuppression[] = [];
    for (const row of inserted) {
      const event = events[row.ord]!;
      const reason =
        event.kind === 'complained' ? SuppressionReason.complaint : event.kind === 'bounced' && event.bounceType === 'hard' ? SuppressionReason.hardBounce : undefined;
      if (!reason) continue;
      // The payload's recipients; when it names none, the matched intent's.
      const recipients = event.recipients.length > 0 ? event.recipients : row.recipient ? [normalizeAddress(row.recipient)] : [];
      for (const address of recipients.filter(looksLikeAddress)) {
        wanted.push({ address, reason, detail: [event.providerType, event.reason].filter(Boolean).join(': ') || null, provider: event.provider });
      }
    }
    const suppressed = await suppressionsAdd(client, schema, wanted);
    return { inserted, suppressed };
  });

  for (const row of inserted) {
    const event = events[row.ord]!;
    // One span per new event, over its ingestion, linked to the hold its intent is for.
    await inSpan(
      'ingest',
      {
        kind: 'consumer',
        startTime: started,
        lazy: () => {
          const attributes: Attributes = {
            [ATTR.messagingSystem]: event.provider,
            [ATTR.messagingOperationType]: 'process',
            [ATTR.messagingMessageId]: event.providerEventId,
            [ATTR.provider]: event.provider,
            [ATTR.eventKind]: event.kind,
            [ATTR.outcome]: row.intent_id ? 'matched' : 'unmatched',
          };
          if (row.intent_id) attributes[ATTR.intentId] = row.intent_id;
          if (row.hold_id) attributes[ATTR.holdId] = row.hold_id;
          return attributes;
        },
        holds: () => (row.hold_id ? [{ traceparent: row.traceparent, holdId: row.hold_id, ...(row.intent_id ? { intentId: row.intent_id } : {}) }] : []),
      },
      async () => {},
    );
    options.metrics?.emailEvents.inc({ provider: event.provider, kind: event.kind });
    // Ids and kinds only: never the recipient or the diagnostic text (it may quote the message).
    logger.info(
      {
        event: 'email_event.received',
        provider: event.provider,
        kind: event.kind,
        bounceType: event.bounceType,
        providerType: event.providerType,
        providerEventId: event.providerEventId,
        intentId: row.intent_id,
        holdId: row.hold_id,
        matched: row.intent_id !== null,
      },
      row.intent_id ? `email ${event.kind}` : `email ${event.kind} for an unknown message id`,
    );
  }
  for (const s of suppressed) {
    options.metrics?.suppressionsAdded.inc({ reason: s.reason });
    logger.warn({ event: 'suppression.added', reason: s.reason, provider: s.provider }, 'recipient suppressed');
  }
  const unmatched = inserted.filter((r) => r.intent_id === null).length;
  return { received: events.length, stored: inserted.length, duplicates: events.length - inserted.length, unmatched, suppressed: suppressed.length };
}
