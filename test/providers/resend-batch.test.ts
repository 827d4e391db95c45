import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BatchContext, BatchMember, BatchMemberResult, EmailMessage } from '../../src/providers/gateway.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { context, message } from '../helpers/message.js';

let fake: FakeResend;
let gateway: ResendGateway;
let n = 0;
beforeAll(async () => {
  fake = new FakeResend();
  await fake.start();
  gateway = new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url });
});
afterAll(() => fake.stop());
beforeEach(() => {
  n++;
});

const messages = (count: number, overrides: Record<number, Partial<EmailMessage>> = {}) =>
  Array.from({ length: count }, (_, i) => message(`rb${n}-${i}`, overrides[i] ?? {}));
const members = (list: EmailMessage[]): BatchMember[] => list.map((m) => ({ message: m, attempt: 1, previousOutcomeUnknown: false }));
const batch = (overrides: Partial<BatchContext> = {}): BatchContext => ({
  batchId: `b${n}`,
  idempotencyKey: `batch-b${n}`,
  signal: AbortSignal.timeout(5000),
  ...overrides,
});
const intentOf = (d: { headers: Record<string, string> }) => d.headers['X-Leasehold-Intent-Id'];
const reasons = (results: BatchMemberResult[]) => results.map((r) => ('reason' in r ? r.reason : ''));
const batchRequests = () => fake.requests.filter((r) => r.path === '/emails/batch');

describe('Resend batch sending against a local Resend API', () => {
  it('an accepted batch gives each member its own email id, in order, under the batch key and strict validation', async () => {
    const list = messages(3);
    const { results, keyUnusable } = await gateway.sendBatch(members(list), batch());
    expect(keyUnusable).toBeUndefined();
    const delivered = fake.deliveries.filter((d) => d.batchKey === `batch-b${n}`);
    expect(delivered.map(intentOf)).toEqual(list.map((m) => m.intentId));
    expect(delivered.map((d) => d.batchIndex)).toEqual([0, 1, 2]);
    expect(results).toEqual(delivered.map((d) => ({ kind: 'accepted', receipt: d.id, providerStatus: 200 })));
    const request = batchRequests().at(-1)!;
    expect(request.headers['idempotency-key']).toBe(`batch-b${n}`);
    expect(request.headers['x-batch-validation']).toBe('strict');
  });

  it('each email of a batch is sent exactly as a single send sends it', async () => {
    const [single, ...rest] = messages(3);
    await gateway.send(single!, context());
    const alone = fake.requests.filter((r) => r.path === '/emails').at(-1)!.body;
    await gateway.sendBatch(members([single!, ...rest]), batch());
    expect((batchRequests().at(-1)!.body as unknown[])[0]).toEqual(alone);
  });

  it('the same batch resent under the same key answers the same ids, and each email is delivered once', async () => {
    const list = messages(4);
    const before = batchRequests().length;
    const first = await gateway.sendBatch(members(list), batch());
    const again = await gateway.sendBatch(members(list), batch());
    expect(again).toEqual(first);
    expect(batchRequests().length - before).toBe(2);
    expect(fake.requestCounts()['/emails/batch']).toBe(batchRequests().length);
    for (const m of list) expect(fake.deliveries.filter((d) => intentOf(d) === m.intentId)).toHaveLength(1);
  });

  it('another body under the same key: the key is unusable and no member knows whether it was delivered', async () => {
    const list = messages(2);
    await gateway.sendBatch(members(list), batch());
    const before = fake.deliveries.length;
    const result = await gateway.sendBatch(members([list[1]!, list[0]!]), batch());
    expect(result.keyUnusable).toBe(true);
    for (const r of result.results) {
      expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 409, providerCode: 'invalid_idempotent_request' });
    }
    expect(reasons(result.results)[0]).toMatch(/invalid_idempotent_request/);
    expect(fake.deliveries.length).toBe(before);
  });

  it('the same key while the first request is still in progress: outcome unknown, the key still usable (concurrent_idempotent_requests), and the batch again later gets the first answer', async () => {
    const slowFake = new FakeResend({ processingMs: 150 });
    await slowFake.start();
    try {
      const slow = new ResendGateway({ apiKey: slowFake.apiKey, baseUrl: slowFake.url });
      const list = members(messages(2));
      const [first, second] = await Promise.all([
        slow.sendBatch(list, batch()),
        new Promise((r) => setTimeout(r, 30)).then(() => slow.sendBatch(list, batch())),
      ]);
      expect(first.results.map((r) => r.kind)).toEqual(['accepted', 'accepted']);
      expect(second.keyUnusable).toBeUndefined();
      expect(second.results[0]).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerCode: 'concurrent_idempotent_requests' });
      // Once the first is done, the same batch under the same key settles: the same ids, nothing new delivered.
      const third = await slow.sendBatch(list, batch());
      expect(third.results).toEqual(first.results);
      expect(slowFake.deliveries).toHaveLength(2);
    } finally {
      await slowFake.stop();
    }
  });

  it('strict validation: a member with a bad address is rejected and the others are unsent; nothing is delivered', async () => {
    const before = fake.deliveries.length;
    const { results } = await gateway.sendBatch(members(messages(3, { 1: { to: 'not-an-address' } })), batch());
    expect(results[1]).toMatchObject({ kind: 'rejected', providerStatus: 422, providerCode: 'validation_error' });
    expect(reasons(results)[1]).toMatch(/recipient/);
    for (const i of [0, 2]) expect(results[i]).toMatchObject({ kind: 'unsent', providerStatus: 422, reason: expect.stringMatching(/email 1\b/) });
    expect(fake.deliveries.length).toBe(before);
    for (const reason of reasons(results)) expect(reason).not.toMatch(/@/);
  });

  it('strict validation: a member from an unverified domain pauses on its own answer, the others are unsent', async () => {
    const { results } = await gateway.sendBatch(members(messages(2, { 0: { from: 'Support <support@unverified.example.org>' } })), batch());
    expect(results[0]).toMatchObject({ kind: 'paused', providerStatus: 403, providerCode: 'validation_error' });
    expect(results[1]).toMatchObject({ kind: 'unsent' });
  });

  it.each([
    ['`emails[2].to`', 'Invalid `emails[2].to` field.'],
    ['`request.body[2]`', 'The `request.body[2].to` field is invalid.'],
    ['request.body.2', 'request.body.2.to: Invalid `to` field.'],
    ['`[2].to`', 'The `[2].to` field must be a valid email.'],
    ['index 2', 'Invalid `to` field in the email at index 2.'],
  ])('a refusal naming the member as %s maps to that member', async (_form, text) => {
    fake.queue({ status: 422, body: { statusCode: 422, name: 'validation_error', message: text } }, '/emails/batch');
    const { results } = await gateway.sendBatch(members(messages(3)), batch());
    expect(results.map((r) => r.kind)).toEqual(['unsent', 'unsent', 'rejected']);
  });

  it("a refusal with permissive mode's errors array maps each named member", async () => {
    fake.queue(
      {
        status: 422,
        body: { statusCode: 422, name: 'validation_error', message: 'Invalid batch.', errors: [{ index: 0, message: 'The `to` field is missing.' }] },
      },
      '/emails/batch',
    );
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    expect(results.map((r) => r.kind)).toEqual(['rejected', 'unsent']);
  });

  it('a recipient index inside one email (to[1]) or an index past the batch names no member', async () => {
    fake.queue({ status: 422, body: { statusCode: 422, name: 'validation_error', message: 'Invalid `to[1]` field at index 7.' } }, '/emails/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    expect(results.map((r) => r.kind)).toEqual(['unsent', 'unsent']);
    expect(reasons(results)[0]).toMatch(/without naming/);
  });

  it('a refusal naming no member: every member is unsent, except that a batch of one gets its own answer', async () => {
    const refusal = { status: 422, body: { statusCode: 422, name: 'validation_error', message: 'Invalid `to` field.' } };
    fake.queue(refusal, '/emails/batch');
    const many = await gateway.sendBatch(members(messages(3)), batch());
    expect(many.results.map((r) => r.kind)).toEqual(['unsent', 'unsent', 'unsent']);
    fake.queue(refusal, '/emails/batch');
    const one = await gateway.sendBatch(members(messages(1)), batch({ idempotencyKey: `batch-b${n}-one` }));
    expect(one.results).toEqual([expect.objectContaining({ kind: 'rejected', providerStatus: 422, providerCode: 'validation_error' })]);
  });

  it('a sender refusal naming no member pauses every member', async () => {
    fake.queue(
      { status: 403, body: { statusCode: 403, name: 'validation_error', message: 'The example.com domain is not verified.' } },
      '/emails/batch',
    );
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    expect(results.map((r) => r.kind)).toEqual(['paused', 'paused']);
  });

  it('429 over the account rate limit: every member is rate-limited for the retry-after, and nothing is delivered', async () => {
    let clock = 1_000_000;
    const limited = new FakeResend({ requestsPerSecond: 1, now: () => clock });
    await limited.start();
    try {
      const g = new ResendGateway({ apiKey: limited.apiKey, baseUrl: limited.url });
      expect((await g.sendBatch(members(messages(2)), batch())).results.map((r) => r.kind)).toEqual(['accepted', 'accepted']);
      clock += 400;
      const { results } = await g.sendBatch(members(messages(3)), batch({ idempotencyKey: `batch-b${n}-2` }));
      for (const r of results) expect(r).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1000, providerStatus: 429, providerCode: 'rate_limit_exceeded' });
      expect(limited.deliveries).toHaveLength(2);
      clock += 600; // the next window
      expect((await g.sendBatch(members(messages(1)), batch({ idempotencyKey: `batch-b${n}-3` }))).results[0]!.kind).toBe('accepted');
    } finally {
      await limited.stop();
    }
  });

  it('daily_quota_exceeded pauses every member', async () => {
    fake.queue({ status: 429, body: { statusCode: 429, name: 'daily_quota_exceeded', message: 'You have reached your daily email sending quota.' } }, '/emails/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'paused', providerCode: 'daily_quota_exceeded' });
  });

  it('500 fails every member with an unknown outcome', async () => {
    fake.queue({ status: 500, body: { statusCode: 500, name: 'internal_server_error', message: 'An unexpected error occurred.' } }, '/emails/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 500 });
  });

  it('a 200 whose ids do not match the members fails every member with an unknown outcome', async () => {
    fake.queue({ status: 200, body: { data: [{ id: 'only-one' }] } }, '/emails/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 200 });
  });

  it('the send timeout aborts the batch and every member has an unknown outcome', async () => {
    fake.queue({ status: 200, body: { data: [{ id: 'late-1' }, { id: 'late-2' }] }, delayMs: 1500 }, '/emails/batch');
    const started = Date.now();
    const { results } = await gateway.sendBatch(members(messages(2)), batch({ signal: AbortSignal.timeout(50) }));
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/timed out/) });
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it('more members than Resend takes in one request is a programming error', async () => {
    await expect(gateway.sendBatch(members(messages(101)), batch())).rejects.toThrow(RangeError);
  });
});

describe('the local Resend API itself', () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${fake.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const email = (to: string) => ({ from: 'Support <support@example.com>', to, subject: 's', text: 't' });

  it('permissive validation delivers the valid emails and lists the others by index', async () => {
    const before = fake.deliveries.length;
    const response = await post('/emails/batch', [email('a@example.net'), email('broken'), email('c@example.net')], {
      'x-batch-validation': 'permissive',
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: Array<{ id: string }>; errors: Array<{ index: number; message: string }> };
    expect(body.data).toHaveLength(2);
    expect(body.errors).toEqual([{ index: 1, message: expect.stringMatching(/Invalid `to` field/) }]);
    expect(fake.deliveries.length - before).toBe(2);
  });

  it('refuses more than 100 emails in a batch', async () => {
    const response = await post('/emails/batch', Array.from({ length: 101 }, (_, i) => email(`u${i}@example.net`)));
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ name: 'validation_error' });
  });

  it('counts the ratelimit-* headers down within a one-second window', async () => {
    let clock = 5_000_000;
    const limited = new FakeResend({ requestsPerSecond: 2, now: () => clock });
    await limited.start();
    try {
      const send = () =>
        fetch(`${limited.url}/emails`, {
          method: 'POST',
          headers: { authorization: `Bearer ${limited.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(email('a@example.net')),
        });
      const first = await send();
      expect([first.headers.get('ratelimit-limit'), first.headers.get('ratelimit-remaining'), first.headers.get('ratelimit-reset')]).toEqual(['2', '1', '1']);
      clock += 100;
      expect((await send()).headers.get('ratelimit-remaining')).toBe('0');
      const over = await send();
      expect(over.status).toBe(429);
      expect(over.headers.get('retry-after')).toBe('1');
      expect(await over.json()).toMatchObject({ name: 'rate_limit_exceeded' });
      expect(limited.deliveries).toHaveLength(2);
    } finally {
      await limited.stop();
    }
  });
});
