/**
 * Why an address is suppressed. Mirrored by the CHECK constraint in
 * migrations/0008_provider_events.sql.
 */
export const SuppressionReason = {
  /** The provider reported a permanent bounce: the address does not take mail. */
  hardBounce: 'hard_bounce',
  /** The recipient marked a message as spam. */
  complaint: 'complaint',
  /** An operator added it (`leasehold suppressions add`, `POST /v1/suppressions`). */
  manual: 'manual',
} as const;

export type SuppressionReason = (typeof SuppressionReason)[keyof typeof SuppressionReason];

/** How the delivery lane's rejection reads: "suppressed: hard bounce at 2025-01-02T03:04:05.000Z". */
export const reasonWords: Record<SuppressionReason, string> = {
  hard_bounce: 'hard bounce',
  complaint: 'complaint',
  manual: 'added by an operator',
};

export interface Suppression {
  addressHash: string;
  /** NULL once erasure removed the address; the hash keeps the suppression working. */
  address: string | null;
  reason: SuppressionReason;
  detail: string | null;
  /** The provider whose event caused it; null for manual ones. */
  provider: string | null;
  createdAt: Date;
}
