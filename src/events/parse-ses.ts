import type { BounceType, EventKind } from '../model/event-kinds.js';
import { addresses, derivedEventId, id, ignored, label, object, optionalObject, optionalString, reason, string, timestamp, type ParsedEvents } from './parse-common.js';

/**
 * SES event records as published to SNS (the `Message` of a verified SNS
 * notification): https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-contents.html
 * `{eventType, mail: {messageId, timestamp, ...}, bounce | complaint | delivery | deliveryDelay | reject | failure}`.
 * Identity notifications (without a configuration set) name the field
 * `notificationType`; both are read. `mail.messageId` is SendEmail's
 * MessageId, the receipt. Bounces and complaints carry a `feedbackId`;
 * other events are identified by message, type and time, so the same event
 * reaching two subscribed topics is stored once.
 */

// A Map, not an object: an eventType of "constructor" must not find anything.
const KINDS = new Map<string, EventKind>([
  ['Delivery', 'delivered'],
  ['Bounce', 'bounced'],
  ['Complaint', 'complained'],
  ['DeliveryDelay', 'delayed'],
  ['Reject', 'failed'],
  ['Rendering Failure', 'failed'],
]);

export function parseSesEvent(message: unknown): ParsedEvents {
  const root = object(message, 'Message');
  const type = string(root.eventType ?? root.notificationType, 'Message.eventType');
  const kind = KINDS.get(type);
  if (!kind) return ignored(type);
  const mail = object(root.mail, 'Message.mail');
  const messageId = id(mail.messageId, 'Message.mail.messageId');

  let detail: Record<string, unknown> | undefined;
  let bounceType: BounceType | null = null;
  let providerType = label(type);
  let why: string | null = null;
  let recipients: string[] = [];
  let feedbackId: string | undefined;
  switch (type) {
    case 'Bounce': {
      detail = object(root.bounce, 'Message.bounce');
      const sesType = optionalString(detail.bounceType);
      bounceType = sesType === 'Permanent' ? 'hard' : 'soft';
      providerType = label(type, sesType, optionalString(detail.bounceSubType));
      const bounced = Array.isArray(detail.bouncedRecipients) ? detail.bouncedRecipients : [];
      recipients = addresses(bounced, 'emailAddress');
      why = reason(bounced.slice(0, 5).map((r) => (r && typeof r === 'object' ? (r as Record<string, unknown>).diagnosticCode : undefined)));
      feedbackId = optionalString(detail.feedbackId);
      break;
    }
    case 'Complaint': {
      detail = object(root.complaint, 'Message.complaint');
      providerType = label(type, optionalString(detail.complaintFeedbackType), optionalString(detail.complaintSubType));
      recipients = addresses(detail.complainedRecipients, 'emailAddress');
      feedbackId = optionalString(detail.feedbackId);
      break;
    }
    case 'Delivery':
      detail = object(root.delivery, 'Message.delivery');
      recipients = addresses(detail.recipients);
      why = reason(detail.smtpResponse);
      break;
    case 'DeliveryDelay':
      detail = object(root.deliveryDelay, 'Message.deliveryDelay');
      providerType = label(type, optionalString(detail.delayType));
      recipients = addresses(detail.delayedRecipients, 'emailAddress');
      break;
    case 'Reject':
      detail = optionalObject(root.reject, 'Message.reject');
      why = reason(detail?.reason);
      break;
    case 'Rendering Failure':
      detail = optionalObject(root.failure, 'Message.failure');
      why = reason(detail?.errorMessage);
      break;
  }
  // Rejects and rendering failures have no time of their own: the send's.
  const occurredAt = timestamp(detail?.timestamp ?? mail.timestamp, `Message.${detail?.timestamp !== undefined ? 'timestamp' : 'mail.timestamp'}`);
  return {
    events: [
      {
        provider: 'ses',
        providerEventId: feedbackId ? `${type}:${id(feedbackId, 'feedbackId')}` : derivedEventId(type, messageId, occurredAt.toISOString(), recipients[0]),
        messageId,
        kind,
        bounceType,
        providerType,
        reason: why,
        occurredAt,
        recipients,
      },
    ],
    ignored: null,
  };
}
