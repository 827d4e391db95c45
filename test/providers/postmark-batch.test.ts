import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BatchContext, BatchMember, BatchMemberResult, EmailMessage } from '../../src/providers/gateway.js';
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

const messages = (count: number, overrides: Record<number, Partial<EmailMessage>> = {}) =>
  Array.from({ length: count }, (_, i) => message(`pb${n}-${i}`, overrides[i] ?? {}));
const members = (list: EmailMessage[], unknown: number[] = []): BatchMember[] =>
  list.map((m, i) => ({ message: m, attempt: unknown.includes(i) ? 2 : 1, previousOutcomeUnknown: unknown.includes(i) }));
const batch = (overrides: Partial<BatchContext> = {}): BatchContext => ({
  batchId: `b${n}`,
  idempotencyKey: `batch-b${n}`,
  signal: AbortSignal.timeout(5000),
  ...overrides,
});
const sentOf = (m: EmailMessage) => fake.outbound.filter((o) => o.Metadata.intent_id === m.intentId);
const batchRequests = () => fake.requests.filter((r) => r.path === '/email/batch');
const reasons = (results: BatchMemberResult[]) => results.map((r) => ('reason' in r ? r.reason : ''));

describe('Postmark batch sending against a local Postmark API', () => {
  it('an accepted batch gives each member its own MessageID, in order, in one request', async () => {
    const list = messages(3);
    const before = batchRequests().length;
    const { results } = await gateway.sendBatch(members(list), batch());
    expect(batchRequests().length - before).toBe(1);
    expect(results).toEqual(list.map((m) => ({ kind: 'accepted', receipt: sentOf(m)[0]!.MessageID, providerStatus: 200 })));
  });

  it('each message of a batch is sent exactly as a single send sends it', async () => {
    const [single, ...rest] = messages(2);
    await gateway.send(single!, context());
    const alone = fake.requests.filter((r) => r.path === '/email').at(-1)!.body;
    await gateway.sendBatch(members([single!, ...rest]), batch());
    expect((batchRequests().at(-1)!.body as unknown[])[0]).toEqual(alone);
  });

  it('per-message codes 0 / 406 / 429 / 300: accepted / rejected / rate-limited / rejected', async () => {
    const list = messages(4, { 1: { to: 'bounced@example.net' }, 3: { to: 'nope' } });
    fake.scriptBatch({ 2: { ErrorCode: 429, Message: 'Rate limit exceeded' } });
    const local = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
    const { results } = await local.sendBatch(members(list), batch());
    expect(results[0]).toMatchObject({ kind: 'accepted', receipt: sentOf(list[0]!)[0]!.MessageID });
    expect(results[1]).toMatchObject({ kind: 'rejected', providerStatus: 200, providerCode: '406', reason: expect.stringMatching(/inactive/) });
    expect(results[2]).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1000, providerCode: '429' });
    expect(results[3]).toMatchObject({ kind: 'rejected', providerCode: '300' });
    expect(list.slice(1).map((m) => sentOf(m).length)).toEqual([0, 0, 0]);
    for (const reason of reasons(results)) expect(reason).not.toMatch(/@/);
  });

  it('a 429 slot in consecutive batches backs off further, like consecutive single sends', async () => {
    const local = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
    fake.scriptBatch({ 0: { ErrorCode: 429 } });
    fake.scriptBatch({ 0: { ErrorCode: 429 } });
    expect((await local.sendBatch(members(messages(2)), batch())).results[0]).toMatchObject({ retryAfterMs: 1000 });
    expect((await local.sendBatch(members(messages(2)), batch())).results[0]).toMatchObject({ retryAfterMs: 2000 });
  });

  it('a member whose earlier outcome is unknown and that Postmark already has is reconciled, not sent twice', async () => {
    const list = messages(3);
    const first = await gateway.send(list[1]!, context());
    const { results } = await gateway.sendBatch(members(list, [1]), batch());
    expect(results[1]).toEqual({ kind: 'accepted', receipt: first.kind === 'accepted' ? first.receipt : '', reconciled: true, providerStatus: 200 });
    expect(sentOf(list[1]!)).toHaveLength(1);
    expect(results[0]).toMatchObject({ kind: 'accepted' });
    expect(results[0]).not.toHaveProperty('reconciled');
    const sent = batchRequests().at(-1)!.body as Array<{ Metadata: Record<string, string> }>;
    expect(sent.map((s) => s.Metadata.intent_id)).toEqual([list[0]!.intentId, list[2]!.intentId]);
  });

  it('a member whose earlier outcome is unknown but that Postmark does not have joins the batch', async () => {
    const list = messages(2);
    const { results } = await gateway.sendBatch(members(list, [0, 1]), batch());
    expect(results.map((r) => r.kind)).toEqual(['accepted', 'accepted']);
    expect(results[0]).not.toHaveProperty('reconciled');
    for (const m of list) expect(sentOf(m)).toHaveLength(1);
  });

  it('when every member is reconciled no batch is sent', async () => {
    const list = messages(2);
    for (const m of list) await gateway.send(m, context());
    const before = batchRequests().length;
    const { results } = await gateway.sendBatch(members(list, [0, 1]), batch());
    expect(results.map((r) => r.kind === 'accepted' && r.reconciled)).toEqual([true, true]);
    expect(batchRequests().length).toBe(before);
  });

  it('a failing lookup leaves that member unsent with an unknown outcome; the others go', async () => {
    const list = messages(2);
    fake.queue({ status: 500, body: { ErrorCode: 0, Message: 'Internal error' } }, '/messages/outbound');
    const { results } = await gateway.sendBatch(members(list, [0]), batch());
    expect(results[0]).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/not resent/) });
    expect(sentOf(list[0]!)).toHaveLength(0);
    expect(results[1]).toMatchObject({ kind: 'accepted' });
  });

  it('when the send timeout runs out during the lookups, the rest is not sent (unsent), and nothing reaches Postmark', async () => {
    const list = messages(2);
    fake.queue({ status: 200, body: { TotalCount: 0, Messages: [] }, delayMs: 1500 }, '/messages/outbound');
    const before = batchRequests().length;
    const { results } = await gateway.sendBatch(members(list, [0]), batch({ signal: AbortSignal.timeout(50) }));
    expect(results[0]).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/not resent/) });
    expect(results[1]).toMatchObject({ kind: 'unsent' });
    expect(batchRequests().length).toBe(before);
  });

  it('a bad token (HTTP 401) pauses every member', async () => {
    const wrong = new PostmarkGateway({ serverToken: 'wrong', baseUrl: fake.url });
    const { results } = await wrong.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'paused', providerStatus: 401, providerCode: '10' });
  });

  it('HTTP 500 fails every member with an unknown outcome', async () => {
    fake.queue({ status: 500, body: '<html>error</html>' }, '/email/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 500 });
  });

  it('HTTP 429 for the whole call rate-limits every member', async () => {
    fake.queue({ status: 429, body: { ErrorCode: 429, Message: 'Rate limit exceeded' } }, '/email/batch');
    const local = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
    const { results } = await local.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1000, providerStatus: 429 });
  });

  it('an answer that does not match the messages fails every member with an unknown outcome', async () => {
    fake.queue({ status: 200, body: [{ ErrorCode: 0, Message: 'OK', MessageID: 'x', To: 'a' }] }, '/email/batch');
    const { results } = await gateway.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: 200 });
  });

  it('a refused connection fails every member as never sent', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const nowhere = new PostmarkGateway({ serverToken: 't', baseUrl: `http://127.0.0.1:${port}` });
    const { results } = await nowhere.sendBatch(members(messages(2)), batch());
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true });
  });

  it('the send timeout aborts the batch and every member has an unknown outcome', async () => {
    fake.queue({ status: 200, body: [], delayMs: 1500 }, '/email/batch');
    const started = Date.now();
    const { results } = await gateway.sendBatch(members(messages(2)), batch({ signal: AbortSignal.timeout(50) }));
    for (const r of results) expect(r).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/timed out/) });
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it('more members than Postmark takes in one request is a programming error', async () => {
    await expect(gateway.sendBatch(members(messages(501)), batch())).rejects.toThrow(RangeError);
  });
});

describe('the local Postmark API itself', () => {
  it('refuses more than 500 messages in a batch with ErrorCode 410', async () => {
    const one = { From: 'support@example.com', To: 'a@example.net', Subject: 's', TextBody: 't' };
    const response = await fetch(`${fake.url}/email/batch`, {
      method: 'POST',
      headers: { 'x-postmark-server-token': fake.serverToken, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(Array.from({ length: 501 }, () => one)),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ ErrorCode: 410 });
  });
});
