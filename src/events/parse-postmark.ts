import type { BounceType, EventKind } from '../model/event-kinds.js';
import { addresses, derivedEventId, id, ignored, label, object, optionalString, reason, string, timestamp, type ParsedEvents } from './parse-common.js';

/**
 * Postmark webhook payloads (https://postmarkapp.com/developer/webhooks/webhooks-overview):
 * one record per POST, told apart by `RecordType`: `Delivery`
 * (`MessageID, Recipient, DeliveredAt, Details`), `Bounce` (`ID, Type,
 * TypeCode, MessageID, Email, BouncedAt, Description, Details, Inactive`)
 * and `SpamComplaint` (the bounce shape, Type `SpamComplaint`). Postmark
 * has no event id: bounces and complaints carry their bounce `ID`, and a
 * delivery is identified by its message, recipient and time.
 */

// Bounce TypeCodes (https://postmarkapp.com/developer/api/bounce-api#bounce-types).
// Only the ones that say something about the address or the delivery are
// stored; auto-replies, address changes, subscribe/unsubscribe requests and
// challenge messages are mail from people, not bounces.
// A Map, not an object: a TypeCode or Type named like an Object.prototype member finds nothing.
const BOUNCES = new Map<number, { kind: EventKind; bounceType?: BounceType }>([
  [1, { kind: 'bounced', bounceType: 'hard' }], // HardBounce
  [100000, { kind: 'bounced', bounceType: 'hard' }], // BadEmailAddress
  [100002, { kind: 'bounced', bounceType: 'hard' }], // ManuallyDeactivated
  [100001, { kind: 'complained' }], // SpamComplaint
  [2, { kind: 'bounced', bounceType: 'soft' }], // Transient
  [256, { kind: 'bounced', bounceType: 'soft' }], // DnsError
  [512, { kind: 'bounced', bounceType: 'soft' }], // SpamNotification
  [2048, { kind: 'bounced', bounceType: 'soft' }], // Unknown
  [4096, { kind: 'bounced', bounceType: 'soft' }], // SoftBounce
  [8192, { kind: 'bounced', bounceType: 'soft' }], // VirusNotification
  [100006, { kind: 'bounced', bounceType: 'soft' }], // Blocked
  [100007, { kind: 'bounced', bounceType: 'soft' }], // SMTPApiError
  [100009, { kind: 'bounced', bounceType: 'soft' }], // DMARCPolicy
  [100003, { kind: 'failed' }], // Unconfirmed (sender signature)
  [100010, { kind: 'failed' }], // TemplateRenderingFailed
]);

const CODES_BY_NAME = new Map<string, number>(Object.entries({
  HardBounce: 1,
  BadEmailAddress: 100000,
  ManuallyDeactivated: 100002,
  SpamComplaint: 100001,
  Transient: 2,
  DnsError: 256,
  SpamNotification: 512,
  Unknown: 2048,
  SoftBounce: 4096,
  VirusNotification: 8192,
  Blocked: 100006,
  SMTPApiError: 100007,
  DMARCPolicy: 100009,
  Unconfirmed: 100003,
  TemplateRenderingFailed: 100010,
}));

export function parsePostmarkEvent(body: unknown): ParsedEvents {
  const root = object(body, 'body');
  const recordType = string(root.RecordType, 'RecordType');
  if (recordType === 'Delivery') {
    const messageId = id(root.MessageID, 'MessageID');
    const occurredAt = timestamp(root.DeliveredAt, 'DeliveredAt');
    const recipients = addresses(root.Recipient);
    return {
      events: [
        {
          provider: 'postmark',
          providerEventId: derivedEventId('Delivery', messageId, recipients[0], occurredAt.toISOString()),
          messageId,
          kind: 'delivered',
          bounceType: null,
          providerType: 'Delivery',
          reason: reason(root.Details),
          occurredAt,
          recipients,
        },
      ],
      ignored: null,
    };
  }
  if (recordType !== 'Bounce' && recordType !== 'SpamComplaint') return ignored(recordType);

  const typeName = optionalString(root.Type);
  const code = typeof root.TypeCode === 'number' ? root.TypeCode : typeName !== undefined ? CODES_BY_NAME.get(typeName) : undefined;
  const mapped = recordType === 'SpamComplaint' ? { kind: 'complained' as const } : code !== undefined ? BOUNCES.get(code) : undefined;
  if (!mapped) return ignored(`${recordType}/${typeName ?? String(code)}`);
  const messageId = id(root.MessageID, 'MessageID');
  const occurredAt = timestamp(root.BouncedAt, 'BouncedAt');
  const recipients = addresses(root.Email);
  const bounceId = root.ID === undefined || root.ID === null ? undefined : id(root.ID, 'ID');
  return {
    events: [
      {
        provider: 'postmark',
        providerEventId: bounceId ? `${recordType}:${bounceId}` : derivedEventId(recordType, messageId, typeName, recipients[0], occurredAt.toISOString()),
        messageId,
        kind: mapped.kind,
        bounceType: mapped.bounceType ?? null,
        providerType: label(recordType, typeName),
        reason: reason(root.Description, root.Details),
        occurredAt,
        recipients,
      },
    ],
    ignored: null,
  };
}
