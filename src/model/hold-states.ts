import { ValidationError } from '../errors.js';

/**
 * Hold states. Mirrored by the CHECK constraints in migrations/0001_holds.sql.
 * Every transition is a conditional update on `status = 'held'`, so a hold
 * leaves `held` at most once and races have exactly one winner.
 */
export const HoldStatus = {
  /** Reserved and waiting: the customer may still confirm, or it expires at expires_at. */
  held: 'held',
  /** Terminal: the customer (or the application) confirmed in time. */
  confirmed: 'confirmed',
  /** Terminal: released on purpose before expiry; no email is sent. */
  cancelled: 'cancelled',
  /** Terminal: the expiry worker moved it here and wrote its email intent in the same transaction. */
  expired: 'expired',
} as const;

export type HoldStatus = (typeof HoldStatus)[keyof typeof HoldStatus];

export interface Hold {
  id: string;
  /** null once its personal data was erased (by age or on request); the timeline stays. */
  customerEmail: string | null;
  status: HoldStatus;
  expiresAt: Date;
  createdAt: Date;
  confirmedAt: Date | null;
  cancelledAt: Date | null;
  expiredAt: Date | null;
  metadata: Record<string, unknown>;
  /** The tenant it belongs to; '' (the empty tenant) when it was created without one. */
  tenant: string;
  /** When its personal data was erased (address, request fingerprint, addresses in metadata), or null. */
  erasedAt: Date | null;
  /** A reminder goes out this many seconds before expiresAt (null: none). */
  remindBeforeSeconds: number | null;
  /** Confirming it sends a confirmation email. */
  notifyOnConfirm: boolean;
}

/** The email an expired hold gets: its template kind, and the prefix of its intent id. */
export const EXPIRED_TEMPLATE = 'reservation-expired';
export const EXPIRED_INTENT_PREFIX = `${EXPIRED_TEMPLATE}:`;

/** The reminder before a hold expires, and the confirmation email (migrations/0024_hold_lifecycle.sql). */
export const REMINDER_TEMPLATE = 'reservation-reminder';
export const CONFIRMED_TEMPLATE = 'reservation-confirmed';

const KIND_WORDS: Record<string, string> = {
  [REMINDER_TEMPLATE]: 'reminder',
  [EXPIRED_TEMPLATE]: 'expiry email',
  [CONFIRMED_TEMPLATE]: 'confirmation email',
};

/** What a kind of email is called in a timeline. */
export const emailWords = (kind: string): string => KIND_WORDS[kind] ?? `${kind} email`;

/** Intent id derived from the hold id: the unique key that makes expiry idempotent. */
export function intentIdForHold(holdId: string): string {
  if (typeof holdId !== 'string' || holdId === '') throw new ValidationError('holdId', holdId === undefined ? 'required' : 'must be a hold id (a non-empty string)');
  return `${EXPIRED_INTENT_PREFIX}${holdId}`;
}
