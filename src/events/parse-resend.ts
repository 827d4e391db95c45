import type { BounceType, EventKind } from '../model/event-kinds.js';
import { addresses, id, ignored, label, object, optionalObject, optionalString, reason, string, timestamp, type ParsedEvents } from './parse-common.js';

/**
 * Resend webhook payloads (https://resend.com/docs/dashboard/webhooks/event-types):
 * `{type, created_at, data: {email_id, to: [...], bounce?: {type, subType, message}, ...}}`,
 * delivered through Svix, whose `svix-id` header is the event's id (a retry
 * of the same event repeats it). Resend sends through SES, so a bounce's
 * `type` is SES's: `Permanent` (hard), `Transient` or `Undetermined` (soft).
 */

// A Map, not an object: a `type` of "constructor" or "valueOf" must not find anything.
const KINDS = new Map<string, EventKind>([
  ['email.delivered', 'delivered'],
  ['email.bounced', 'bounced'],
  ['email.complained', 'complained'],
  ['email.delivery_delayed', 'delayed'],
  ['email.failed', 'failed'],
]);

export function parseResendEvent(body: unknown, svixId: string): ParsedEvents {
  const root = object(body, 'body');
  const type = string(root.type, 'type');
  const kind = KINDS.get(type);
  if (!kind) return ignored(type);
  const data = object(root.data, 'data');
  const messageId = id(data.email_id, 'data.email_id');
  // The top-level created_at is when Resend created the event; data.created_at is the email's.
  const occurredAt = timestamp(root.created_at ?? data.created_at, 'created_at');

  let bounceType: BounceType | null = null;
  let providerType = label(type);
  let why: string | null = null;
  if (kind === 'bounced') {
    const bounce = optionalObject(data.bounce, 'data.bounce');
    const resendType = optionalString(bounce?.type);
    // email.bounced is documented as a permanent rejection; only an explicit
    // Transient/Undetermined type makes it soft.
    bounceType = resendType === 'Transient' || resendType === 'Undetermined' ? 'soft' : 'hard';
    providerType = label(type, resendType, optionalString(bounce?.subType));
    why = reason(bounce?.message, bounce?.diagnosticCode);
  } else if (kind === 'failed') {
    why = reason(optionalObject(data.failed, 'data.failed')?.reason);
  }
  return {
    events: [
      {
        provider: 'resend',
        providerEventId: id(svixId, 'svix-id'),
        messageId,
        kind,
        bounceType,
        providerType,
        reason: why,
        occurredAt,
        recipients: addresses(data.to),
      },
    ],
    ignored: null,
  };
}
