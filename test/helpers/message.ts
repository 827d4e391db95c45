import type { EmailMessage, SendContext } from '../../src/providers/gateway.js';
import { emailMessageFor } from '../../src/delivery/messages.js';
import { shippedTemplates } from '../../src/templates/templates.js';

/** A reservation-expired message rendered from the shipped templates, as the delivery worker would send it. */
export function message(holdId = 'h-1', overrides: Partial<EmailMessage> = {}): EmailMessage {
  const intentId = `reservation-expired:${holdId}`;
  const rendered = shippedTemplates().render('reservation-expired', {
    intentId,
    holdId,
    metadata: { slot: 'Callback, Tue 10:00' },
    expiresAt: new Date('2026-01-01T10:00:00Z'),
    expiredAt: new Date('2026-01-01T10:00:01Z'),
    from: 'Support <support@example.com>',
  });
  return {
    ...emailMessageFor(
      { id: intentId, holdId, recipient: `customer+${holdId}@example.net`, replays: 0 },
      { ...rendered, intentId, renderedAt: new Date() },
    ),
    ...overrides,
  };
}

export function context(overrides: Partial<SendContext> = {}): SendContext {
  return { attempt: 1, previousOutcomeUnknown: false, signal: AbortSignal.timeout(5000), ...overrides };
}
