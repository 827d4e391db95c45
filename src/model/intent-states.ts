/**
 * Email intent states. Mirrored by the CHECK constraints in
 * migrations/0002_outbox.sql and 0024_hold_lifecycle.sql.
 */
export const IntentState = {
  /** Waiting to be sent (or leased: a live lease_token and lease_expires_at). */
  pending: 'pending',
  /** Terminal: a provider accepted it; the receipt is stored. */
  sent: 'sent',
  /** Terminal: the provider refused the message itself; never retried. */
  rejected: 'rejected',
  /** Terminal: failed LEASEHOLD_MAX_ATTEMPTS times; an operator may replay it. */
  dead: 'dead',
  /** Terminal: a reminder whose hold was confirmed or cancelled before it went out; never sent. */
  voided: 'voided',
  /** Terminal: still unsent at its deadline (send_by), because delivery was paused, rate-limited or backed off; never sent. */
  missedDeadline: 'missed_deadline',
} as const;

export type IntentState = (typeof IntentState)[keyof typeof IntentState];

/** Outcomes recorded on email_attempts rows. */
export const AttemptOutcome = {
  accepted: 'accepted',
  rateLimited: 'rate_limited',
  rejected: 'rejected',
  failed: 'failed',
  paused: 'paused',
  /** The worker holding the lease vanished (crash) before recording anything. */
  leaseExpired: 'lease_expired',
  /** A stopping worker gave the intent back without sending. */
  abandoned: 'abandoned',
} as const;

export type AttemptOutcome = (typeof AttemptOutcome)[keyof typeof AttemptOutcome];

export interface Intent {
  id: string;
  holdId: string;
  /** Its hold's tenant, copied when the intent was created ('' for the empty tenant). */
  tenant: string;
  template: string;
  state: IntentState;
  /** The moment after which it is not sent (ends missed_deadline instead), or null: no deadline. */
  sendBy: Date | null;
  attempts: number;
  failedAttempts: number;
  availableAt: Date;
  createdAt: Date;
  sentAt: Date | null;
  finishedAt: Date | null;
  receipt: string | null;
  lastError: string | null;
  leased: boolean;
  leaseExpiresAt: Date | null;
  leaseExpirations: number;
  replays: number;
  possibleDuplicate: boolean;
  /** The provider account it is routed to (null: not yet leased; it starts on the first in failover). */
  account: string | null;
  /** The account an attempt with an unknown outcome went through: the intent is sent only there until settled. */
  pinnedAccount: string | null;
  /** The account that accepted it. */
  sentAccount: string | null;
}

export interface Attempt {
  attempt: number;
  provider: string | null;
  /** The provider account it went through (null: before accounts existed). */
  account: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: AttemptOutcome | null;
  outcomeUnknown: boolean;
  providerStatus: number | null;
  providerCode: string | null;
  receipt: string | null;
  error: string | null;
  durationMs: number | null;
  /** The batch it was sent in (one provider request for several emails), or null: sent alone. */
  batchId: string | null;
  /** How many emails that batch's request carried (null: sent alone). */
  batchMembers: number | null;
}

/** What an intent id may look like (ids are derived from hold ids, plus a replay suffix in keys). */
export const INTENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:#-]{0,199}$/;

/** The key providers deduplicate on for the current round of an intent. */
export function idempotencyKeyFor(intentId: string, replays: number): string {
  return replays === 0 ? intentId : `${intentId}#replay-${replays}`;
}
