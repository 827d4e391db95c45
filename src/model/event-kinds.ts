import { ValidationError } from '../errors.js';

/**
 * What a provider can report about a message after accepting it. Mirrored by
 * the CHECK constraints in migrations/0008_provider_events.sql.
 */
export const EventKind = {
  /** The receiving server took the message. */
  delivered: 'delivered',
  /** It came back: `bounceType` hard (the address does not take mail; suppresses it) or soft (temporary). */
  bounced: 'bounced',
  /** The recipient marked it as spam (suppresses the address). */
  complained: 'complained',
  /** Delivery is being retried by the provider (greylisting, full mailbox, ...). */
  delayed: 'delayed',
  /** The provider gave up without a bounce (SES Reject or Rendering Failure, Resend email.failed). */
  failed: 'failed',
} as const;

export type EventKind = (typeof EventKind)[keyof typeof EventKind];

export const BounceType = { hard: 'hard', soft: 'soft' } as const;
export type BounceType = (typeof BounceType)[keyof typeof BounceType];

/** The providers that report events (the SMTP relay reports none). */
export type EventProvider = 'resend' | 'postmark' | 'ses' | 'sandbox';

/**
 * One provider event, as every parser produces it and the ingestion stores
 * it. `recipients` is held in memory only, to suppress addresses; it is
 * never stored on the event, logged, or used as a metric label.
 */
export interface ProviderEvent {
  provider: EventProvider;
  /** Unique per event at this provider: retries of the same event repeat it. */
  providerEventId: string;
  /** The provider's message id: the receipt the delivery lane stored. */
  messageId: string;
  kind: EventKind;
  /** Set for bounces only. */
  bounceType: BounceType | null;
  /** The provider's own name for it, e.g. `HardBounce` or `Permanent/General`. */
  providerType: string | null;
  /** Diagnostic text with addresses redacted. */
  reason: string | null;
  /** When the provider says it happened. */
  occurredAt: Date;
  recipients: string[];
}

/** One stored event, as the timeline and the API show it (no recipient). */
export interface EmailEvent {
  provider: string;
  providerEventId: string;
  messageId: string;
  intentId: string | null;
  kind: EventKind;
  bounceType: BounceType | null;
  providerType: string | null;
  reason: string | null;
  occurredAt: Date;
  receivedAt: Date;
}

/** Shown on the trace: which event says how the email ended. */
export interface EmailOutcome {
  kind: EventKind;
  bounceType: BounceType | null;
  at: Date;
  provider: string;
  reason: string | null;
}

// Later events do not simply win: a delivery reported after a hard bounce
// (events arrive in any order) does not undo it, and a complaint always
// follows a delivery. The strongest fact wins; ties go to the latest.
const strength = (e: Pick<EmailEvent, 'kind' | 'bounceType'>): number => {
  switch (e.kind) {
    case 'complained':
      return 5;
    case 'bounced':
      return e.bounceType === 'hard' ? 4 : 1;
    case 'failed':
      return 3;
    case 'delivered':
      return 2;
    case 'delayed':
      return 0;
  }
};

/** The fifth moment: how the email ended, by what the provider reported, whatever the arrival order. */
export function emailOutcome(events: EmailEvent[]): EmailOutcome | null {
  if (!Array.isArray(events)) throw new ValidationError('events', 'must be an array of EmailEvent');
  let best: EmailEvent | undefined;
  for (const e of events) {
    if (!best) best = e;
    else {
      const diff = strength(e) - strength(best);
      if (diff > 0 || (diff === 0 && e.occurredAt.getTime() > best.occurredAt.getTime())) best = e;
    }
  }
  if (!best) return null;
  return { kind: best.kind, bounceType: best.bounceType, at: best.occurredAt, provider: best.provider, reason: best.reason };
}
