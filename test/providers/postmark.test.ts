import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { context, message } from '../helpers/message.js';

let fake: FakePostmark;
let gateway: PostmarkGateway;
let n = 0;
beforeAll(async () => {
  fake = new FakePostmark({ inactiveRecipients: ['bounced@example.net'] });
  await fake.start();
  gateway = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
});
afterAll(() => fake.stop());
beforeEach(() => {
  n++;
});

const msg = () => message(`p${n}`);
const apiError = (status: number, ErrorCode: number, Message: string) => ({ status, body: { ErrorCode, Message } });

describe('Postmark adapter against a local Postmark API', () => {
  it('accepted: sends the token, intent metadata and header, and returns the MessageID', async () => {
    const m = msg();
    const result = await gateway.send(m, context());
    const sent = fake.outbound.at(-1)!;
    expect(result).toEqual({ kind: 'accepted', receipt: sent.MessageID, providerStatus: 200 });
    expect(fake.requests.at(-1)!.headers['x-postmark-server-token']).toBe(fake.serverToken);
    expect(sent.Metadata).toEqual({ intent_id: m.intentId, idempotency_key: m.idempotencyKey });
    expect(sent.Headers).toContainEqual({ Name: 'X-Leasehold-Intent-Id', Value: m.intentId });
    expect(sent.Tag).toBe('reservation-expired');
    expect(sent.MessageStream).toBe('outbound');
  });

  it('after an ambiguous attempt, a message already at Postmark is reconciled, not sent again', async () => {
    const m = msg();
    const first = await gateway.send(m, context());
    const before = fake.outbound.length;
    const again = await gateway.send(m, context({ attempt: 2, previousOutcomeUnknown: true }));
    expect(again).toEqual({ kind: 'accepted', receipt: first.kind === 'accepted' ? first.receipt : '', reconciled: true, providerStatus: 200 });
    expect(fake.outbound.length).toBe(before);
    const search = fake.requests.find((r) => r.path === '/messages/outbound' && r.query.get('metadata_intent_id') === m.intentId)!;
    expect(search.query.get('count')).toBe('50');
    expect(search.query.get('offset')).toBe('0');
  });

  it('after an ambiguous attempt that never arrived, the lookup finds nothing and the message is sent', async () => {
    const m = msg();
    const result = await gateway.send(m, context({ attempt: 2, previousOutcomeUnknown: true }));
    expect(result).toMatchObject({ kind: 'accepted' });
    expect(result).not.toHaveProperty('reconciled');
    expect(fake.outbound.filter((o) => o.Metadata.intent_id === m.intentId)).toHaveLength(1);
  });

  it('a replay (new idempotency key) is sent even though the original is found', async () => {
    const m = msg();
    await gateway.send(m, context());
    const replay = await gateway.send({ ...m, idempotencyKey: `${m.intentId}#replay-1` }, context({ previousOutcomeUnknown: true }));
    expect(replay).toMatchObject({ kind: 'accepted' });
    expect(replay).not.toHaveProperty('reconciled');
    expect(fake.outbound.filter((o) => o.Metadata.intent_id === m.intentId)).toHaveLength(2);
  });

  it('an intent id longer than Postmark allows in metadata is hashed, and still reconciled', async () => {
    const m = message(`p${n}-${'x'.repeat(120)}`);
    const first = await gateway.send(m, context());
    expect(first.kind).toBe('accepted');
    const sent = fake.outbound.at(-1)!;
    expect(sent.Metadata.intent_id).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(sent.Headers).toContainEqual({ Name: 'X-Leasehold-Intent-Id', Value: m.intentId });
    const before = fake.outbound.length;
    expect(await gateway.send(m, context({ previousOutcomeUnknown: true }))).toMatchObject({ kind: 'accepted', reconciled: true });
    expect(fake.outbound.length).toBe(before);
  });

  it('a failing lookup does not send: it fails with an unknown outcome', async () => {
    const m = msg();
    fake.queue({ status: 500, body: { ErrorCode: 0, Message: 'Internal error' } }, '/messages/outbound');
    const before = fake.outbound.length;
    const result = await gateway.send(m, context({ attempt: 2, previousOutcomeUnknown: true }));
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/not resent/) });
    expect(fake.outbound.length).toBe(before);
  });

  it('ErrorCode 300 (invalid To) is rejected', async () => {
    expect(await gateway.send(message(`p${n}`, { to: 'nope' }), context())).toMatchObject({
      kind: 'rejected',
      providerStatus: 422,
      providerCode: '300',
    });
  });

  it('ErrorCode 406 (inactive recipient) is rejected, without the address in the reason', async () => {
    const result = await gateway.send(message(`p${n}`, { to: 'bounced@example.net' }), context());
    expect(result).toMatchObject({ kind: 'rejected', providerCode: '406' });
    expect(result.kind === 'rejected' && result.reason).toMatch(/inactive/);
    expect(result.kind === 'rejected' && result.reason).not.toMatch(/@/);
  });

  it('ErrorCode 10 (bad token, HTTP 401) pauses delivery', async () => {
    const wrong = new PostmarkGateway({ serverToken: 'wrong', baseUrl: fake.url });
    expect(await wrong.send(msg(), context())).toMatchObject({ kind: 'paused', providerStatus: 401, providerCode: '10' });
  });

  it('ErrorCode 400 (sender signature not found) pauses delivery', async () => {
    expect(await gateway.send(message(`p${n}`, { from: 'x@unknown.example.org' }), context())).toMatchObject({
      kind: 'paused',
      providerCode: '400',
    });
  });

  it.each([
    [401, 'Sender signature not confirmed'],
    [405, 'Not allowed to send'],
    [412, 'Account is pending'],
    [413, 'Account may not send'],
  ])('ErrorCode %i pauses delivery', async (code, text) => {
    fake.queue(apiError(422, code, text));
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'paused', providerStatus: 422, providerCode: String(code) });
  });

  it('ErrorCode 100 (maintenance) fails and is retried', async () => {
    fake.queue(apiError(503, 100, 'Maintenance'));
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: false, providerCode: '100' });
  });

  it.each([500, 503])('HTTP %i fails with an unknown outcome', async (status) => {
    fake.queue({ status, body: '<html>error</html>' });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: status });
  });

  it('HTTP 429 is rate-limited with a backoff that grows while 429s continue', async () => {
    fake.queue({ status: 429, body: { ErrorCode: 429, Message: 'Rate limit exceeded' } });
    fake.queue({ status: 429, body: { ErrorCode: 429, Message: 'Rate limit exceeded' } });
    const local = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
    const first = await local.send(msg(), context());
    const second = await local.send(msg(), context());
    expect(first).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1000, providerStatus: 429 });
    expect(second).toMatchObject({ kind: 'rate_limited', retryAfterMs: 2000 });
    expect(await local.send(msg(), context())).toMatchObject({ kind: 'accepted' });
  });

  it('a dropped connection fails with an unknown outcome', async () => {
    fake.queue({ status: 200, drop: true });
    expect(await gateway.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('a refused connection fails without an unknown outcome (nothing was sent)', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const nowhere = new PostmarkGateway({ serverToken: 't', baseUrl: `http://127.0.0.1:${port}` });
    expect(await nowhere.send(msg(), context())).toMatchObject({ kind: 'failed', outcomeUnknown: false });
  });

  it('the send timeout aborts the request and reports an unknown outcome', async () => {
    fake.queue({ status: 200, body: { MessageID: 'late', ErrorCode: 0 }, delayMs: 1500 });
    const started = Date.now();
    const result = await gateway.send(msg(), context({ signal: AbortSignal.timeout(50) }));
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/timed out/) });
    expect(Date.now() - started).toBeLessThan(1200); // the answer would have come at 1.5 s
  });
});
