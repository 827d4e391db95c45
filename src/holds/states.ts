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
  customerEmail: string;
  status: HoldStatus;
  expiresAt: Date;
  createdAt: Date;
  confirmedAt: Date | null;
  cancelledAt: Date | null;
  expiredAt: Date | null;
  metadata: Record<string, unknown>;
}

/** Intent id derived from the hold id: the unique key that makes expiry idempotent. */
export function intentIdForHold(holdId: string): string {
  return `reservation-expired:${holdId}`;
}
