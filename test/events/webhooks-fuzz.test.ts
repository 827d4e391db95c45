import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';
import { LocalSns, SNS_HOST, TOPIC_ARN } from '../helpers/local-sns.js';

/**
 * Whatever reaches the webhook and suppression routes, the answer is a
 * documented 4xx or a 200 in the one error shape, never a 5xx: unsigned
 * noise, and, past verification, correctly signed or authenticated bodies
 * of any shape (a provider could send anything it signs).
 */

const RESEND_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const POSTMARK = { user: 'fuzz', password: 'fuzz-password-0123456789' };
const RUNS = 120;

// Made now (its certificate URL is part of the arbitraries), started before the tests.
const sns = new LocalSns();
let h: ApiHarness;
beforeAll(async () => {
  await sns.start();
  h = await apiHarness('webhooks_fuzz', {}, {
    webhooks: { resend: { secret: RESEND_SECRET }, postmark: POSTMARK, ses: { topicArns: [TOPIC_ARN], agent: sns.agent } },
  });
});
afterAll(async () => {
  await h?.close();
  await sns.stop();
});

function assertDocumented(res: { statusCode: number; body: string }, allowed: number[], what: string): void {
  expect(res.statusCode, `${what} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(allowed, `${what} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  if (res.statusCode >= 400) {
    const parsed = JSON.parse(res.body) as { error: { code: unknown; message: unknown } };
    expect(typeof parsed.error.code, what).toBe('string');
    expect(typeof parsed.error.message, what).toBe('string');
  }
}

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', 'x'.repeat(600)),
  // Names every plain object has: a lookup table must not find them.
  fc.constantFrom('constructor', '__proto__', 'valueOf', 'toString', 'hasOwnProperty'),
);
const date = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(new Date().toISOString(), '+275760-09-13T00:00:00.000Z', '0000-01-01T00:00:00Z', 'yesterday', ''),
  fc.integer(),
);
const address = fc.oneof(fc.emailAddress(), text, fc.constant('Name <a@example.com>'));
const anyValue = fc.oneof(text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
const messageId = fc.oneof(text, fc.integer(), fc.constant(null), fc.constantFrom('fuzz-msg-1', 'fuzz-msg-2'), fc.double());

const resendShaped = fc.record(
  {
    type: fc.oneof(fc.constantFrom('email.delivered', 'email.bounced', 'email.complained', 'email.delivery_delayed', 'email.failed', 'email.opened'), text),
    created_at: date,
    data: fc.oneof(
      fc.record(
        {
          email_id: messageId,
          created_at: date,
          to: fc.oneof(fc.array(address, { maxLength: 3 }), address, anyValue),
          bounce: fc.oneof(fc.record({ type: fc.oneof(fc.constantFrom('Permanent', 'Transient', 'Undetermined'), anyValue), subType: anyValue, message: anyValue }, { requiredKeys: [] }), anyValue),
          failed: fc.oneof(fc.record({ reason: anyValue }), anyValue),
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
  },
  { requiredKeys: [] },
);

const postmarkShaped = fc.record(
  {
    RecordType: fc.oneof(fc.constantFrom('Delivery', 'Bounce', 'SpamComplaint', 'Open', 'Click', 'SubscriptionChange'), text),
    ID: fc.oneof(fc.integer(), fc.double(), fc.constant(1e21), text, fc.constant(null)),
    Type: fc.oneof(fc.constantFrom('HardBounce', 'Transient', 'SpamComplaint', 'AutoResponder', 'BadEmailAddress'), text),
    TypeCode: fc.oneof(fc.constantFrom(1, 2, 64, 4096, 100000, 100001, 100010), fc.integer(), anyValue),
    MessageID: messageId,
    Email: address,
    Recipient: address,
    BouncedAt: date,
    DeliveredAt: date,
    Description: anyValue,
    Details: anyValue,
  },
  { requiredKeys: [] },
);

const sesShaped = fc.record(
  {
    eventType: fc.oneof(fc.constantFrom('Bounce', 'Complaint', 'Delivery', 'DeliveryDelay', 'Reject', 'Rendering Failure', 'Open'), text),
    notificationType: fc.oneof(fc.constantFrom('Bounce', 'Delivery'), text),
    mail: fc.oneof(fc.record({ messageId, timestamp: date, destination: fc.array(address, { maxLength: 2 }) }, { requiredKeys: [] }), anyValue),
    bounce: fc.oneof(
      fc.record(
        {
          bounceType: fc.oneof(fc.constantFrom('Permanent', 'Transient'), anyValue),
          bounceSubType: anyValue,
          timestamp: date,
          feedbackId: fc.oneof(text, anyValue),
          bouncedRecipients: fc.oneof(fc.array(fc.record({ emailAddress: address, diagnosticCode: anyValue }, { requiredKeys: [] }), { maxLength: 3 }), anyValue),
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
    complaint: fc.oneof(fc.record({ timestamp: date, feedbackId: anyValue, complainedRecipients: fc.array(fc.record({ emailAddress: address }), { maxLength: 2 }) }, { requiredKeys: [] }), anyValue),
    delivery: fc.oneof(fc.record({ timestamp: date, recipients: fc.array(address, { maxLength: 2 }), smtpResponse: anyValue }, { requiredKeys: [] }), anyValue),
    deliveryDelay: anyValue,
    reject: anyValue,
  },
  { requiredKeys: [] },
);

const rawBody = fc.oneof(
  resendShaped.map((v) => JSON.stringify(v)),
  postmarkShaped.map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constantFrom('', '{', '[', 'null', '"x"', '{"__proto__":{"x":1}}', '\u0000', '1e999', '['.repeat(5000)),
);

const snsShaped = fc.record(
  {
    Type: fc.oneof(fc.constantFrom('Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation'), text),
    MessageId: text,
    TopicArn: fc.oneof(fc.constant(TOPIC_ARN), text),
    Message: fc.oneof(sesShaped.map((v) => JSON.stringify(v)), text),
    Timestamp: fc.oneof(fc.constant(new Date().toISOString()), date),
    SignatureVersion: fc.constantFrom('1', '2', '3', ''),
    Signature: fc.oneof(fc.base64String({ maxLength: 40 }), text),
    SigningCertURL: fc.oneof(
      fc.constant(sns.certUrl),
      fc.constant(`https://${SNS_HOST}/SimpleNotificationService-${'a'.repeat(32)}.pem`),
      fc.webUrl(),
      text,
    ),
    SubscribeURL: fc.oneof(fc.webUrl(), fc.constant(`https://${SNS_HOST}/?Action=ConfirmSubscription&TopicArn=${TOPIC_ARN}&Token=x`)),
  },
  { requiredKeys: [] },
);

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('application/json', 'text/plain; charset=UTF-8') },
  fc.constantFrom(undefined, 'application/x-www-form-urlencoded', 'text/html', 'application/jsonx', ''),
);

const noiseHeaders = fc.record(
  {
    'svix-id': text.filter((s) => /^[\x21-\x7e]*$/.test(s)),
    'svix-timestamp': fc.oneof(fc.integer().map(String), fc.constant(String(Math.floor(Date.now() / 1000)))),
    'svix-signature': fc.oneof(fc.constant('v1,AAAA'), fc.base64String({ maxLength: 60 }).map((s) => `v1,${s}`)),
    authorization: fc.oneof(
      fc.base64String({ maxLength: 40 }).map((s) => `Basic ${s}`),
      fc.constant(`Basic ${Buffer.from(`${POSTMARK.user}:nope`).toString('base64')}`),
      fc.constant(`Bearer ${TOKEN}`),
    ),
  },
  { requiredKeys: [] },
);

describe('fuzz: webhook routes never answer 5xx', () => {
  it.each(['resend', 'postmark', 'ses'])('unverified noise at %s: 400, 401, 413 or 415', async (provider) => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(rawBody, snsShaped.map((v) => JSON.stringify(v))), contentType, noiseHeaders, async (payload, type, headers) => {
        const res = await h.app.inject({
          method: 'POST',
          url: `/v1/webhooks/${provider}`,
          headers: { ...headers, ...(type !== undefined ? { 'content-type': type } : {}) },
          payload,
        });
        assertDocumented(res, [400, 401, 413, 415], `${provider} [${type}] ${payload.slice(0, 120)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('correctly signed Resend bodies of any shape: 200 or 400', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: resendShaped.map((v) => JSON.stringify(v)) }, rawBody), fc.string({ minLength: 1, maxLength: 30 }).filter((s) => /^[\x21-\x7e]+$/.test(s)), async (body, id) => {
        const now = new Date();
        const res = await h.app.inject({
          method: 'POST',
          url: '/v1/webhooks/resend',
          headers: { 'content-type': 'application/json', 'svix-id': id, 'svix-timestamp': String(Math.floor(now.getTime() / 1000)), 'svix-signature': new Webhook(RESEND_SECRET).sign(id, now, body) },
          payload: body,
        });
        seen.add(res.statusCode);
        assertDocumented(res, [200, 400], `resend ${body.slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
    expect([...seen].sort()).toEqual([200, 400]);
  });

  it('authenticated Postmark bodies of any shape: 200 or 400', async () => {
    const authorization = `Basic ${Buffer.from(`${POSTMARK.user}:${POSTMARK.password}`).toString('base64')}`;
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: postmarkShaped.map((v) => JSON.stringify(v)) }, rawBody), async (body) => {
        const res = await h.app.inject({ method: 'POST', url: '/v1/webhooks/postmark', headers: { 'content-type': 'application/json', authorization }, payload: body });
        seen.add(res.statusCode);
        assertDocumented(res, [200, 400], `postmark ${body.slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
    expect([...seen].sort()).toEqual([200, 400]);
  });

  it('AWS-signed SNS notifications carrying any Message: 200 or 400', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: sesShaped }, fc.jsonValue({ maxDepth: 2 }), fc.string({ maxLength: 50 })), fc.constantFrom('1', '2') as fc.Arbitrary<'1' | '2'>, async (message, version) => {
        const res = await h.app.inject({
          method: 'POST',
          url: '/v1/webhooks/ses',
          headers: { 'content-type': 'text/plain; charset=UTF-8' },
          payload: JSON.stringify(sns.notification(message, { version })),
        });
        seen.add(res.statusCode);
        assertDocumented(res, [200, 400], `ses ${JSON.stringify(message).slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
    expect([...seen].sort()).toEqual([200, 400]);
  });
});

describe('fuzz: suppression routes never answer 5xx', () => {
  it('list, add and remove with anything', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'DELETE'),
        fc.oneof(fc.string({ maxLength: 40 }).map(encodeURIComponent), fc.emailAddress().map(encodeURIComponent), fc.constantFrom('%00', '%ZZ', 'a'.repeat(400), '0'.repeat(64), 'A'.repeat(64))),
        fc.oneof(fc.constant(undefined), fc.record({ address: fc.oneof(address, anyValue), detail: anyValue, reason: anyValue }, { requiredKeys: [] }).map((v) => JSON.stringify(v)), rawBody),
        fc.dictionary(fc.constantFrom('limit', 'cursor', 'reason', 'x'), fc.oneof(text, fc.constantFrom('0', '501', '1', 'manual', 'complaint', 'WyIxIiwiYSJd'))),
        async (method, segment, payload, query) => {
          const qs = new URLSearchParams(query).toString();
          const url = (method === 'DELETE' ? `/v1/suppressions/${segment}` : '/v1/suppressions') + (qs ? `?${qs}` : '');
          const res = await h.app.inject({
            method,
            url,
            headers: { authorization: `Bearer ${TOKEN}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
            ...(payload !== undefined && method !== 'GET' ? { payload } : {}),
          });
          assertDocumented(res, [200, 201, 400, 404, 413, 415], `${method} ${url} ${String(payload).slice(0, 100)}`);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });
});

it('the process still serves after the fuzz', async () => {
  expect((await h.call('GET', '/v1/suppressions?limit=1')).statusCode).toBe(200);
});
