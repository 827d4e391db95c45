import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { emailOutcome, type EmailEvent } from '../../src/model/event-kinds.js';
import { parsePostmarkEvent } from '../../src/events/parse-postmark.js';
import { parseResendEvent } from '../../src/events/parse-resend.js';
import { parseSesEvent } from '../../src/events/parse-ses.js';
import { snsHostFor } from '../../src/events/sns.js';
import { webhookSettingsFromEnv } from '../../src/events/webhook-config.js';

/** The payload parsers and the outcome rule, pure: no database, no network. */

const now = '2025-03-01T10:00:00.000Z';

describe('Resend', () => {
  const event = (type: string, data: Record<string, unknown> = {}) => ({ type, created_at: now, data: { email_id: 'e-1', to: ['Ana <Ana@Example.com>'], ...data } });

  it('maps the email.* types it stores, with the svix-id as the event id and the addresses normalised', () => {
    const { events } = parseResendEvent(event('email.delivered'), 'msg_1');
    expect(events).toEqual([
      { provider: 'resend', providerEventId: 'msg_1', messageId: 'e-1', kind: 'delivered', bounceType: null, providerType: 'email.delivered', reason: null, occurredAt: new Date(now), recipients: ['ana@example.com'] },
    ]);
    expect(parseResendEvent(event('email.complained'), 'm').events[0]!.kind).toBe('complained');
    expect(parseResendEvent(event('email.delivery_delayed'), 'm').events[0]!.kind).toBe('delayed');
    expect(parseResendEvent(event('email.failed', { failed: { reason: 'reached_daily_quota' } }), 'm').events[0]).toMatchObject({ kind: 'failed', reason: 'reached_daily_quota' });
  });

  it('a bounce is hard unless Resend says Transient or Undetermined', () => {
    expect(parseResendEvent(event('email.bounced', { bounce: { type: 'Permanent', subType: 'Suppressed' } }), 'm').events[0]).toMatchObject({ bounceType: 'hard', providerType: 'email.bounced/Permanent/Suppressed' });
    expect(parseResendEvent(event('email.bounced', { bounce: { type: 'Transient', subType: 'MailboxFull' } }), 'm').events[0]!.bounceType).toBe('soft');
    expect(parseResendEvent(event('email.bounced', { bounce: { type: 'Undetermined' } }), 'm').events[0]!.bounceType).toBe('soft');
    expect(parseResendEvent(event('email.bounced'), 'm').events[0]!.bounceType).toBe('hard');
  });

  it('ignores what it does not store, and names the field of what it cannot read', () => {
    expect(parseResendEvent(event('email.clicked'), 'm')).toEqual({ events: [], ignored: 'email.clicked' });
    expect(parseResendEvent({ type: 'contact.created', data: {} }, 'm').ignored).toBe('contact.created');
    const field = (body: unknown) => {
      try {
        parseResendEvent(body, 'm');
      } catch (error) {
        return (error as ValidationError).field;
      }
      return undefined;
    };
    expect(field(null)).toBe('body');
    expect(field({ data: {} })).toBe('type');
    expect(field({ type: 'email.delivered', created_at: now })).toBe('data');
    expect(field({ type: 'email.delivered', created_at: now, data: { email_id: 'a\u0000b' } })).toBe('data.email_id');
    expect(field({ type: 'email.delivered', created_at: '+300000-01-01T00:00:00Z', data: { email_id: 'x' } })).toBe('created_at');
    expect(field({ type: 'email.delivered', data: { email_id: 'x' } })).toBe('created_at');
  });

  it('reasons lose addresses and control characters', () => {
    const { events } = parseResendEvent(event('email.bounced', { bounce: { type: 'Permanent', message: 'no\u0000such user ana@example.com' } }), 'm');
    expect(events[0]!.reason).toBe('no such user <address>');
  });
});

describe('Postmark', () => {
  const bounce = (Type: string, TypeCode: number) => ({ RecordType: 'Bounce', ID: 42, Type, TypeCode, MessageID: 'p-1', Email: 'x@example.com', BouncedAt: now, Details: 'smtp;550 x@example.com' });

  it.each([
    ['HardBounce', 1, 'bounced', 'hard'],
    ['BadEmailAddress', 100000, 'bounced', 'hard'],
    ['ManuallyDeactivated', 100002, 'bounced', 'hard'],
    ['Transient', 2, 'bounced', 'soft'],
    ['SoftBounce', 4096, 'bounced', 'soft'],
    ['DnsError', 256, 'bounced', 'soft'],
    ['Blocked', 100006, 'bounced', 'soft'],
    ['SpamComplaint', 100001, 'complained', null],
    ['TemplateRenderingFailed', 100010, 'failed', null],
  ])('Bounce %s (%i) is %s/%s', (type, code, kind, bounceType) => {
    const [event] = parsePostmarkEvent(bounce(type, code)).events;
    expect(event).toMatchObject({ provider: 'postmark', providerEventId: 'Bounce:42', messageId: 'p-1', kind, bounceType, providerType: `Bounce/${type}`, recipients: ['x@example.com'] });
    expect(event!.reason).not.toContain('x@example.com');
  });

  it.each([
    ['AutoResponder', 64],
    ['AddressChange', 128],
    ['Subscribe', 32],
    ['ChallengeVerification', 16384],
  ])('Bounce %s is mail from a person, ignored', (type, code) => {
    expect(parsePostmarkEvent(bounce(type, code))).toEqual({ events: [], ignored: `Bounce/${type}` });
  });

  it('a type known only by name still maps; a Delivery has a stable derived id', () => {
    const { TypeCode: _c, ...byName } = bounce('HardBounce', 1);
    expect(parsePostmarkEvent(byName).events[0]!.bounceType).toBe('hard');
    const delivery = { RecordType: 'Delivery', MessageID: 'p-2', Recipient: 'y@example.com', DeliveredAt: now, Details: 'smtp;250 OK' };
    const a = parsePostmarkEvent(delivery).events[0]!;
    const b = parsePostmarkEvent({ ...delivery }).events[0]!;
    expect(a.providerEventId).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a.providerEventId).toBe(b.providerEventId);
    expect(parsePostmarkEvent({ ...delivery, DeliveredAt: '2025-03-01T10:00:01.000Z' }).events[0]!.providerEventId).not.toBe(a.providerEventId);
  });

  it('SpamComplaint records and other RecordTypes', () => {
    expect(parsePostmarkEvent({ ...bounce('SpamComplaint', 100001), RecordType: 'SpamComplaint' }).events[0]).toMatchObject({ kind: 'complained', providerEventId: 'SpamComplaint:42' });
    expect(parsePostmarkEvent({ RecordType: 'Click', MessageID: 'p' }).ignored).toBe('Click');
    expect(() => parsePostmarkEvent({ RecordType: 'Bounce', Type: 'HardBounce', TypeCode: 1, BouncedAt: now })).toThrow(/MessageID/);
  });
});

describe('SES', () => {
  const mail = { messageId: 's-1', timestamp: now, destination: ['z@example.com'] };

  it('reads eventType (event publishing) and notificationType (identity notifications)', () => {
    const delivery = { mail, delivery: { timestamp: now, recipients: ['z@example.com'], smtpResponse: '250 ok' } };
    expect(parseSesEvent({ eventType: 'Delivery', ...delivery }).events[0]).toMatchObject({ kind: 'delivered', reason: '250 ok', messageId: 's-1' });
    expect(parseSesEvent({ notificationType: 'Delivery', ...delivery }).events[0]!.kind).toBe('delivered');
  });

  it('Permanent bounces are hard, others soft; the feedbackId is the event id', () => {
    const bounce = (bounceType: string) => ({
      eventType: 'Bounce',
      mail,
      bounce: { bounceType, bounceSubType: 'General', timestamp: now, feedbackId: 'fb-1', bouncedRecipients: [{ emailAddress: 'Z@example.com', diagnosticCode: 'smtp; 550 <z@example.com>' }] },
    });
    expect(parseSesEvent(bounce('Permanent')).events[0]).toMatchObject({ bounceType: 'hard', providerEventId: 'Bounce:fb-1', recipients: ['z@example.com'] });
    expect(parseSesEvent(bounce('Transient')).events[0]!.bounceType).toBe('soft');
    expect(parseSesEvent(bounce('Undetermined')).events[0]!.bounceType).toBe('soft');
  });

  it('Reject and Rendering Failure are failed (at the send time); DeliveryDelay is delayed; Send, Open, Click are ignored', () => {
    expect(parseSesEvent({ eventType: 'Reject', mail, reject: { reason: 'Bad content' } }).events[0]).toMatchObject({ kind: 'failed', reason: 'Bad content', occurredAt: new Date(now) });
    expect(parseSesEvent({ eventType: 'Rendering Failure', mail, failure: { errorMessage: 'missing var' } }).events[0]!.kind).toBe('failed');
    expect(parseSesEvent({ eventType: 'DeliveryDelay', mail, deliveryDelay: { timestamp: now, delayType: 'MailboxFull', delayedRecipients: [] } }).events[0]).toMatchObject({ kind: 'delayed', providerType: 'DeliveryDelay/MailboxFull' });
    for (const type of ['Send', 'Open', 'Click', 'Subscription']) expect(parseSesEvent({ eventType: type, mail }).ignored).toBe(type);
  });
});

describe('lookup tables', () => {
  it('a type named like an Object.prototype member is just unknown (found by the fuzz: it was a 500)', () => {
    for (const type of ['valueOf', 'constructor', '__proto__', 'toString']) {
      expect(parseResendEvent({ type, created_at: now, data: { email_id: 'x' } }, 'm')).toEqual({ events: [], ignored: type });
      expect(parseSesEvent({ eventType: type, mail: { messageId: 'x', timestamp: now } }).ignored).toBe(type);
      expect(parsePostmarkEvent({ RecordType: 'Bounce', Type: type, MessageID: 'x', BouncedAt: now }).events).toEqual([]);
    }
  });
});

describe('the fifth moment: how the email ended', () => {
  const e = (kind: EmailEvent['kind'], at: number, bounceType: EmailEvent['bounceType'] = null): EmailEvent => ({
    provider: 'resend',
    providerEventId: `${kind}-${at}`,
    messageId: 'm',
    intentId: 'i',
    kind,
    bounceType,
    providerType: null,
    reason: null,
    occurredAt: new Date(at),
    receivedAt: new Date(at),
  });

  it('is null without events, and the strongest fact otherwise, whatever the order', () => {
    expect(emailOutcome([])).toBeNull();
    expect(emailOutcome([e('delayed', 1), e('delivered', 2)])!.kind).toBe('delivered');
    expect(emailOutcome([e('bounced', 1, 'soft'), e('delivered', 2)])!.kind).toBe('delivered');
    expect(emailOutcome([e('delivered', 2), e('bounced', 1, 'hard')])).toMatchObject({ kind: 'bounced', bounceType: 'hard' });
    expect(emailOutcome([e('bounced', 3, 'hard'), e('delivered', 5)])!.kind).toBe('bounced');
    expect(emailOutcome([e('complained', 9), e('delivered', 2)])).toMatchObject({ kind: 'complained', at: new Date(9) });
    expect(emailOutcome([e('delivered', 2), e('delivered', 7)])!.at).toEqual(new Date(7));
  });
});

describe('webhook configuration', () => {
  it('reads each provider’s variables and names a bad one', () => {
    expect(webhookSettingsFromEnv({})).toEqual({});
    const secret = `whsec_${Buffer.from('0123456789abcdef0123').toString('base64')}`;
    expect(
      webhookSettingsFromEnv({
        RESEND_WEBHOOK_SECRET: secret,
        POSTMARK_WEBHOOK_USER: 'hooks',
        POSTMARK_WEBHOOK_PASSWORD: 'long-enough-password',
        SES_WEBHOOK_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:ses-events, arn:aws-cn:sns:cn-north-1:123456789012:b',
      }),
    ).toEqual({
      resend: { secret },
      postmark: { user: 'hooks', password: 'long-enough-password' },
      ses: { topicArns: ['arn:aws:sns:eu-west-1:123456789012:ses-events', 'arn:aws-cn:sns:cn-north-1:123456789012:b'] },
    });
    const variable = (env: Record<string, string>) => {
      try {
        webhookSettingsFromEnv(env);
      } catch (error) {
        return (error as { variable?: string }).variable;
      }
      return undefined;
    };
    expect(variable({ RESEND_WEBHOOK_SECRET: 'whsec_not base64!' })).toBe('RESEND_WEBHOOK_SECRET');
    expect(variable({ POSTMARK_WEBHOOK_USER: 'hooks' })).toBe('POSTMARK_WEBHOOK_PASSWORD');
    expect(variable({ POSTMARK_WEBHOOK_PASSWORD: 'long-enough-password' })).toBe('POSTMARK_WEBHOOK_USER');
    expect(variable({ POSTMARK_WEBHOOK_USER: 'h', POSTMARK_WEBHOOK_PASSWORD: 'short' })).toBe('POSTMARK_WEBHOOK_PASSWORD');
    expect(variable({ SES_WEBHOOK_TOPIC_ARN: 'my-topic' })).toBe('SES_WEBHOOK_TOPIC_ARN');
  });

  it('an SNS topic’s certificates and confirmations come from its own region’s host', () => {
    expect(snsHostFor('arn:aws:sns:eu-west-1:123456789012:t')).toBe('sns.eu-west-1.amazonaws.com');
    expect(snsHostFor('arn:aws-cn:sns:cn-north-1:123456789012:t')).toBe('sns.cn-north-1.amazonaws.com.cn');
    expect(snsHostFor('arn:aws:sns:us-east-1:123:t')).toBeUndefined();
  });
});
