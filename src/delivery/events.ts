import type { AttemptResult, RecordedResult } from '../tables/outbox.js';

/** Told after the statement recording the attempt has committed. */
export interface IntentSentEvent {
  intentId: string;
  holdId: string;
  attempt: number;
  /** The provider's message id. */
  receipt: string | null;
  /** An earlier attempt's outcome was unknown and the provider does not deduplicate: the customer may get two emails. */
  possibleDuplicate: boolean;
}

export interface IntentRejectedEvent {
  intentId: string;
  holdId: string;
  attempt: number;
  reason: string | null;
}

/** Failed max-attempts times: leasehold stops trying. */
export interface IntentDeadEvent {
  intentId: string;
  holdId: string;
  attempt: number;
  reason: string | null;
}

export interface DeliveryEvents {
  sent: IntentSentEvent;
  rejected: IntentRejectedEvent;
  dead: IntentDeadEvent;
}

export type DeliveryEvent = { [K in keyof DeliveryEvents]: [K, DeliveryEvents[K]] }[keyof DeliveryEvents];

/**
 * The events a round's recorded results make: one per intent that reached
 * sent, rejected or dead. A fenced result (the lease had moved on, so the
 * row was left alone) is not news; neither is a retry.
 */
export function deliveryEvents(
  results: AttemptResult[],
  recorded: RecordedResult[],
  intents: ReadonlyMap<string, { holdId: string }>,
): DeliveryEvent[] {
  const byId = new Map(results.map((r) => [r.id, r]));
  const events: DeliveryEvent[] = [];
  for (const row of recorded) {
    const result = byId.get(row.id);
    if (!row.applied || !result) continue;
    const ids = { intentId: row.id, holdId: intents.get(row.id)?.holdId ?? '', attempt: result.attempt };
    if (row.state === 'sent') events.push(['sent', { ...ids, receipt: result.receipt, possibleDuplicate: row.possibleDuplicate }]);
    else if (row.state === 'rejected') events.push(['rejected', { ...ids, reason: result.error }]);
    else if (row.state === 'dead') events.push(['dead', { ...ids, reason: result.error }]);
  }
  return events;
}
