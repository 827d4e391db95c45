import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SES_DAILY_QUOTA_PAUSE_MS } from '../../src/providers/classify-ses.js';
import { SesGateway } from '../../src/providers/ses.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { sesError, sesErrorServer, startSesLocal, type SesLocal } from '../helpers/fake-ses.js';
import { context, message } from '../helpers/message.js';

const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };

describe('SES adapter against aws-ses-v2-local', () => {
  let local: SesLocal;
  let gateway: SesGateway;
  beforeAll(async () => {
    local = await startSesLocal();
    gateway = new SesGateway({ region: 'us-east-1', endpoint: local.url, credentials });
  });
  afterAll(async () => {
    await gateway.close();
    await local.stop();
  });

  it('accepted: the message arrives with its intent header and the MessageId is the receipt', async () => {
    const m = message('s1');
    const result = await gateway.send(m, context());
    expect(result).toMatchObject({ kind: 'accepted', providerStatus: 200 });
    const stored = (await local.emails()).find((e) => result.kind === 'accepted' && e.messageId === result.receipt)!;
    expect(stored.subject).toBe(m.subject);
    expect(stored.destination.to).toEqual([m.to]);
    expect(stored.headers).toContainEqual({ name: 'X-Leasehold-Intent-Id', value: m.intentId });
  });

  it('without an idempotency key a second send is a second delivery', async () => {
    const m = message('s2');
    await gateway.send(m, context());
    await gateway.send(m, context({ attempt: 2, previousOutcomeUnknown: true }));
    const copies = (await local.emails()).filter((e) => e.headers?.some((h) => h.value === m.intentId));
    expect(copies).toHaveLength(2);
    expect(gateway.idempotent).toBe(false);
  });
});

describe('SES adapter against SES v2 error answers', () => {
  let server: FakeHttpServer;
  let gateway: SesGateway;
  beforeAll(async () => {
    server = sesErrorServer();
    await server.start();
    gateway = new SesGateway({ region: 'us-east-1', endpoint: server.url, credentials });
  });
  afterAll(async () => {
    await gateway.close();
    await server.stop();
  });

  it('sends EmailTags with the intent id, a signed request, and makes exactly one attempt', async () => {
    const m = message('s3');
    server.queue(sesError(500, 'InternalFailure', 'Internal failure'));
    const before = server.requests.length;
    await gateway.send(m, context());
    expect(server.requests.length - before).toBe(1); // maxAttempts: 1, the outbox owns retries
    const request = server.requests.at(-1)!;
    expect(request.path).toBe('/v2/email/outbound-emails');
    expect(request.headers['authorization']).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDLOCAL\//);
    const body = request.body as { EmailTags: Array<{ Name: string; Value: string }>; Content: { Simple: { Headers: unknown[] } } };
    expect(body.EmailTags).toContainEqual({ Name: 'intent_id', Value: 'reservation-expired_s3' });
    expect(body.Content.Simple.Headers).toContainEqual({ Name: 'X-Leasehold-Intent-Id', Value: m.intentId });
  });

  it('TooManyRequestsException is rate-limited', async () => {
    server.queue(sesError(429, 'TooManyRequestsException', 'Too many requests have been made to the operation.'));
    expect(await gateway.send(message('s4'), context())).toMatchObject({
      kind: 'rate_limited',
      providerStatus: 429,
      providerCode: 'TooManyRequestsException',
    });
  });

  it('"Maximum sending rate exceeded" is rate-limited', async () => {
    server.queue(sesError(400, 'ThrottlingException', 'Maximum sending rate exceeded.'));
    expect(await gateway.send(message('s5'), context())).toMatchObject({ kind: 'rate_limited' });
  });

  it('"Daily message quota exceeded" pauses delivery until the quota can have freed', async () => {
    server.queue(sesError(429, 'TooManyRequestsException', 'Daily message quota exceeded.'));
    expect(await gateway.send(message('s6'), context())).toMatchObject({ kind: 'paused', resumeAfterMs: SES_DAILY_QUOTA_PAUSE_MS });
  });

  it('MessageRejected is rejected', async () => {
    server.queue(sesError(400, 'MessageRejected', 'Address blacklisted.'));
    expect(await gateway.send(message('s7'), context())).toMatchObject({ kind: 'rejected', providerCode: 'MessageRejected' });
  });

  it.each([
    ['AccountSuspendedException', "The message can't be sent because the account's ability to send email has been permanently restricted."],
    ['SendingPausedException', "The message can't be sent because the account's ability to send email is currently paused."],
    ['MailFromDomainNotVerifiedException', "The message can't be sent because the sending domain isn't verified."],
  ])('%s pauses delivery', async (type, text) => {
    server.queue(sesError(400, type, text));
    expect(await gateway.send(message('s8'), context())).toMatchObject({ kind: 'paused', providerStatus: 400, providerCode: type });
  });

  it.each([500, 503])('%i fails with an unknown outcome', async (status) => {
    server.queue(sesError(status, status === 500 ? 'InternalFailure' : 'ServiceUnavailable', 'Service error'));
    expect(await gateway.send(message('s9'), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerStatus: status });
  });

  it('a dropped connection fails with an unknown outcome', async () => {
    server.queue({ status: 200, drop: true });
    expect(await gateway.send(message('s10'), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('the send timeout aborts the request and reports an unknown outcome', async () => {
    server.queue({ status: 200, body: { MessageId: 'late' }, delayMs: 1500 });
    const started = Date.now();
    const result = await gateway.send(message('s11'), context({ signal: AbortSignal.timeout(50) }));
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true });
    expect(Date.now() - started).toBeLessThan(1200); // the answer would have come at 1.5 s
  });
});
