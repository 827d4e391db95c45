import type { EmailMessage, SendContext } from '../../src/providers/gateway.js';
import { renderReservationExpired } from '../../src/providers/template.js';

/** A rendered reservation-expired message, as the delivery worker would send it. */
export function message(holdId = 'h-1', overrides: Partial<EmailMessage> = {}): EmailMessage {
  const intentId = `reservation-expired:${holdId}`;
  return {
    ...renderReservationExpired({
      intentId,
      holdId,
      idempotencyKey: intentId,
      recipient: `customer+${holdId}@example.net`,
      from: 'Support <support@example.com>',
      expiresAt: new Date('2026-01-01T10:00:00Z'),
    }),
    ...overrides,
  };
}

export function context(overrides: Partial<SendContext> = {}): SendContext {
  return { attempt: 1, previousOutcomeUnknown: false, signal: AbortSignal.timeout(5000), ...overrides };
}
