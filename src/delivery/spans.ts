import { annotate, ATTR, capped, DB_SYSTEM, inSpan, linkHolds, MESSAGING_SYSTEM } from '../observability/tracing.js';
import type { RoundLease } from './legs.js';

/**
 * A delivery round's lease as an OpenTelemetry span (observability/tracing.ts):
 * the take and lease statements on the outbox, linked to each leased
 * intent's hold (its stored traceparent), with the ids, accounts and
 * outcome. Without a registered SDK it only runs `lease`.
 */
export function leaseInSpan(
  schema: string,
  slots: number,
  lease: () => Promise<RoundLease>,
  /** The statement that leased: the lane's own, or the expiry statement of a hand-off (delivery/hand-off.ts), which inserted them leased. */
  by: 'intentsLease' | 'holdsExpireDue (hand-off)' = 'intentsLease',
): Promise<RoundLease> {
  const attributes = {
    [ATTR.dbSystem]: DB_SYSTEM,
    [ATTR.dbNamespace]: schema,
    [ATTR.dbCollection]: 'email_outbox',
    [ATTR.dbOperation]: by === 'intentsLease' ? 'UPDATE' : 'INSERT',
    [ATTR.dbQuerySummary]: by,
    [ATTR.messagingSystem]: MESSAGING_SYSTEM,
    [ATTR.messagingOperationType]: 'receive',
    [ATTR.messagingDestination]: 'email_outbox',
  };
  return inSpan('lease', { kind: 'client', attributes }, async (span) => {
    const taken = await lease();
    const leased = () => taken.legs.flatMap((leg) => leg.intents);
    linkHolds(span, () =>
      leased().map((intent) => ({ traceparent: intent.holdTraceparent, holdId: intent.holdId, intentId: intent.id, attempt: intent.attempts })),
    );
    annotate(span, () => ({
      [ATTR.messagingBatchCount]: taken.legs.reduce((n, leg) => n + leg.intents.length, 0),
      [ATTR.batchSize]: slots,
      [ATTR.account]: capped(taken.legs.flatMap((leg) => leg.intents.map(() => leg.account.name))),
      [ATTR.intentIds]: capped(leased().map((intent) => intent.id)),
      [ATTR.holdIds]: capped(leased().map((intent) => intent.holdId)),
      [ATTR.outcome]: taken.permits === 0 ? (taken.blocked ?? 'rate-limit') : 'leased',
    }));
    return taken;
  });
}
