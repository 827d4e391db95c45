import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ResendGateway } from '../../src/providers/resend.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { context, message } from '../helpers/message.js';

let fake: FakeResend;
let gateway: ResendGateway;
let n = 0;
beforeAll(async () => {
  fake = new FakeResend({ processingMs: 0 });
  await fake.start();
  gateway = new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url });
});
afterAll(() => fake.stop());
beforeEach(() => {
  n++;
});

const msg = () => message(`r${n}`);
const lastRequest = () => fake.requests.at(-1)!;

describe('Resend adapter against a local Resend API', () => {
  it('accepted: sends the idempotency key, intent header and tags, and returns the email id', async () => {
    const m = msg();
    const result = await gateway.send(m, context());
    expect(result).toMatchObject({ kind: 'accepted', providerStatus: 200 });
    const delivery = fake.deliveries.at(-1)!;
    expect(result.kind === 'accepted' && result.receipt).toBe(delivery.id);
    const request = lastRequest();
    expect(request.headers['idempotency-key']).toBe(m.idempotencyKey);
    expect(request.headers['authorization']).toBe(`Bearer ${fake.apiKey}`);
    expect(delivery.headers['X-Leasehold-Intent-Id']).toBe(m.intentId);
    expect(delivery.tags).toEqual([
      { name: 'intent_id', value: m.intentId.replace(':', '_') },
      { name: 'template', value: 'reservation-expired' },
    ]);
    expect(delivery.subject).toBe(m.subject);
  });

  it('the same key again returns the first id and delivers nothing new', async () => {
    const m = msg();
    const first = await gateway.send(m, context());
    const before = fake.deliveries.length;
    const second = await gateway.send(m, context({ attempt: 2, previousOutcomeUnknown: true }));
    expect(second).toEqual(first);
    expect(fake.deliveries.length).toBe(before);
  });

  it('invalid_idempotent_request: the key reused with another payload is rejected, not resent', async () => {
    const m = msg();
    await gateway.send(m, context());
    const before = fake.deliveries.length;
    const result = await gateway.send({ ...m, subject: 'changed' }, context({ attempt: 2 }));
    expect(result).toMatchObject({ kind: 'rejected', providerStatus: 409, providerCode: 'invalid_idempotent_request' });
    expect(fake.deliveries.length).toBe(before);
  });

  it('concurrent_idempotent_requests: a second send while the first is in progress fails with an unknown outcome', async () => {
    const slowFake = new FakeResend({ processingMs: 150 });
    await slowFake.start();
    try {
      const slow = new ResendGateway({ apiKey: slowFake.apiKey, baseUrl: slowFake.url });
      const m = msg();
      const [first, second] = await Promise.all([
        slow.send(m, context()),
        new Promise((r) => setTimeout(r, 30)).then(() => slow.send(m, context({ attempt: 2 }))),
      ]);
      expect(first.kind).toBe('accepted');
      expect(second).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 409, providerCode: 'concurrent_idempotent_requests' });
      expect(slowFake.deliveries).toHaveLength(1);
    } finally {
      await slowFake.stop();
    }
  });

  it('rate_limit_exceeded: 429 with retry-after is rate-limited for that long', async () => {
    fake.queue({
      status: 429,
      body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests. You can only make 5 requests per second.' },
      headers: { 'retry-after': '2', 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'ratelimit-reset': '1' },
    });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'rate_limited', retryAfterMs: 2000, providerStatus: 429 });
  });

  it('rate_limit_exceeded without retry-after uses ratelimit-reset', async () => {
    fake.queue({
      status: 429,
      body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests.' },
      headers: { 'ratelimit-reset': '4' },
    });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'rate_limited', retryAfterMs: 4000 });
  });

  it('daily_quota_exceeded pauses delivery with a resume time', async () => {
    fake.queue({ status: 429, body: { statusCode: 429, name: 'daily_quota_exceeded', message: 'You have reached your daily email sending quota.' } });
    const result = await gateway.send(msg(), context());
    expect(result).toMatchObject({ kind: 'paused', providerCode: 'daily_quota_exceeded' });
    expect(result.kind === 'paused' && result.resumeAfterMs).toBeGreaterThan(0);
  });

  it('monthly_quota_exceeded pauses delivery', async () => {
    fake.queue({ status: 429, body: { statusCode: 429, name: 'monthly_quota_exceeded', message: 'You have reached your monthly email sending quota.' } });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'paused', providerCode: 'monthly_quota_exceeded' });
  });

  it('a recipient the API refuses (422 validation_error) is rejected', async () => {
    expect(await gateway.send(message(`r${n}`, { to: 'not-an-address' }), context())).toMatchObject({
      kind: 'rejected',
      providerStatus: 422,
      providerCode: 'validation_error',
    });
  });

  it('an unverified from domain (403 validation_error) pauses delivery', async () => {
    expect(await gateway.send(message(`r${n}`, { from: 'Support <support@unverified.example.org>' }), context())).toMatchObject({
      kind: 'paused',
      providerStatus: 403,
    });
  });

  it('a wrong API key (403 invalid_api_key) pauses delivery', async () => {
    const wrong = new ResendGateway({ apiKey: 're_wrong', baseUrl: fake.url });
    expect(await wrong.send(msg(), context())).toMatchObject({ kind: 'paused', providerCode: 'invalid_api_key' });
  });

  it.each([
    [401, 'missing_api_key'],
    [401, 'restricted_api_key'],
    [403, 'invalid_from_address'],
  ])('%i %s pauses delivery', async (status, name) => {
    fake.queue({ status, body: { statusCode: status, name, message: 'x' } });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'paused', providerCode: name });
  });

  it('500 fails with an unknown outcome', async () => {
    fake.queue({ status: 500, body: { statusCode: 500, name: 'internal_server_error', message: 'An unexpected error occurred.' } });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 500 });
  });

  it('a 502 with an HTML body fails with an unknown outcome', async () => {
    fake.queue({ status: 502, body: '<html>Bad gateway</html>' });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 502 });
  });

  it('a dropped connection fails with an unknown outcome', async () => {
    fake.queue({ status: 200, drop: true });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('the send timeout aborts the request and reports an unknown outcome', async () => {
    fake.queue({ status: 200, body: { id: 'late' }, delayMs: 1500 });
    const started = Date.now();
    const result = await gateway.send(msg(), context({ signal: AbortSignal.timeout(50) }));
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/timed out/) });
    expect(Date.now() - started).toBeLessThan(1200); // the answer would have come at 1.5 s
  });
});
