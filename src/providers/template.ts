import type { EmailMessage } from './gateway.js';

export const INTENT_HEADER = 'X-Leasehold-Intent-Id';

export interface TemplateInput {
  intentId: string;
  holdId: string;
  idempotencyKey: string;
  recipient: string;
  from: string;
  expiresAt: Date;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The `reservation-expired` email. Rendered only from stored facts (ids and
 * the deadline), so every attempt of an intent sends the identical message
 * and a duplicate is recognisable by its intent header.
 */
export function renderReservationExpired(input: TemplateInput): EmailMessage {
  const when = input.expiresAt.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  const subject = 'Your reservation has expired';
  const text =
    `Hello,\n\n` +
    `Your reservation ${input.holdId} was held until ${when} and has now expired, ` +
    `so it has been released.\n\n` +
    `If you still need it, please make a new reservation.\n\n` +
    `Reference: ${input.intentId}\n`;
  const html =
    `<!doctype html><html><body>` +
    `<p>Hello,</p>` +
    `<p>Your reservation <strong>${escapeHtml(input.holdId)}</strong> was held until ${escapeHtml(when)} ` +
    `and has now expired, so it has been released.</p>` +
    `<p>If you still need it, please make a new reservation.</p>` +
    `<p style="color:#666;font-size:12px">Reference: ${escapeHtml(input.intentId)}</p>` +
    `</body></html>`;
  return {
    intentId: input.intentId,
    holdId: input.holdId,
    idempotencyKey: input.idempotencyKey,
    to: input.recipient,
    from: input.from,
    subject,
    text,
    html,
    headers: { [INTENT_HEADER]: input.intentId },
    tags: { intent_id: input.intentId, template: 'reservation-expired' },
  };
}
