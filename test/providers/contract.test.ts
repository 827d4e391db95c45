import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from '../../src/providers/gateway.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { SesGateway } from '../../src/providers/ses.js';
import { SmtpGateway } from '../../src/providers/smtp.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { sesError, sesErrorServer, startSesLocal, type SesLocal } from '../helpers/fake-ses.js';
import { FakeSmtp } from '../helpers/fake-smtp.js';
import { context, message } from '../helpers/message.js';

/**
 * The EmailGateway contract (src/providers/gateway.ts) that every adapter
 * keeps, each checked against its local fake or server. A new adapter joins
 * by adding an entry to `adapters`.
 *
 * Each entry says how its provider produces each answer (a canned reply, a
 * refusing recipient, a wrong credential) and how the provider carries the
 * intent header and the idempotency key. Where a provider has no such answer
 * at all, the entry leaves it out and says why.
 */
interface Sent {
  intentHeader: string | undefined;
  /** The idempotency key as the provider holds it; null where it has none. */
  key: string | null;
}

/** One send, arranged to meet a given answer. */
interface Arranged {
  gateway: EmailGateway;
  message?: Partial<EmailMessage>;
  context?: Partial<SendContext>;
  /** Runs while the send is under way (to time it out at the right moment). */
  during?: (abort: (reason: Error) => void) => Promise<void>;
}

type Answer = 'rateLimited' | 'rejected' | 'unknown' | 'paused';

interface Adapter {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A gateway that reaches an accepting provider. */
  gateway(): EmailGateway;
  /** What the provider received for this message's accepted send. */
  received(m: EmailMessage, receipt: string): Promise<Sent>;
  arrange: Record<Answer, (() => Promise<Arranged>) | { none: string }>;
  /**
   * Known breaches of the contract, each with what is wrong: those checks run
   * as expected failures (it.fails), so fixing the adapter turns them red
   * until the entry is removed here.
   */
  breaches?: Partial<Record<Answer, string>>;
}

let seq = 0;
const next = (adapter: string) => `${adapter}-${++seq}`;
/** The address a refusal names (providers quote it back; it must not come out). */
const REFUSED = 'refused.customer@example.net';

const sandbox: Adapter = (() => {
  let main: SandboxGateway;
  return {
    name: 'sandbox',
    async start() {
      main = new SandboxGateway();
    },
    stop: async () => main.close(),
    gateway: () => main,
    async received(m, receipt) {
      const record = main.accepted.find((r) => r.receipt === receipt)!;
      return { intentHeader: record.headers['X-Leasehold-Intent-Id'], key: record.idempotencyKey };
    },
    arrange: {
      async rateLimited() {
        const gateway = new SandboxGateway({ rateLimit: { perSecond: 0.001, burst: 1 } });
        await gateway.send(message(next('sandbox')), context()); // takes the one permit
        return { gateway };
      },
      rejected: async () => ({ gateway: new SandboxGateway({ rejectRate: 1 }) }),
      // The sandbox's ambiguous answer: a send still under way at the timeout.
      unknown: async () => ({ gateway: new SandboxGateway({ latencyMs: 5000 }), context: { signal: AbortSignal.timeout(20) } }),
      // It has no credentials; its account-level refusal is a suspended account.
      paused: async () => ({ gateway: new SandboxGateway({ pauseRate: 1 }) }),
    },
  };
})();

const resend: Adapter = (() => {
  let fake: FakeResend;
  const gateway = (apiKey = fake.apiKey) => new ResendGateway({ apiKey, baseUrl: fake.url });
  return {
    name: 'resend',
    async start() {
      fake = new FakeResend();
      await fake.start();
    },
    stop: () => fake.stop(),
    gateway: () => gateway(),
    async received(_m, receipt) {
      const delivery = fake.deliveries.find((d) => d.id === receipt)!;
      return { intentHeader: delivery.headers['X-Leasehold-Intent-Id'], key: delivery.idempotencyKey ?? null };
    },
    arrange: {
      async rateLimited() {
        fake.queue({
          status: 429,
          headers: { 'retry-after': '2' },
          body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests. You can only make 2 requests per second.' },
        });
        return { gateway: gateway() };
      },
      async rejected() {
        fake.queue({ status: 422, body: { statusCode: 422, name: 'validation_error', message: `Invalid \`to\` field: ${REFUSED}.` } });
        return { gateway: gateway(), message: { to: REFUSED } };
      },
      async unknown() {
        fake.queue({ status: 500, body: { statusCode: 500, name: 'internal_server_error', message: 'An unexpected error occurred.' } });
        return { gateway: gateway() };
      },
      paused: async () => ({ gateway: gateway('re_wrong_key') }),
    },
  };
})();

const postmark: Adapter = (() => {
  let fake: FakePostmark;
  const gateway = (serverToken = fake.serverToken) => new PostmarkGateway({ serverToken, baseUrl: fake.url });
  return {
    name: 'postmark',
    async start() {
      fake = new FakePostmark({ inactiveRecipients: [REFUSED] });
      await fake.start();
    },
    stop: () => fake.stop(),
    gateway: () => gateway(),
    async received(m, receipt) {
      const sent = fake.outbound.find((o) => o.MessageID === receipt)!;
      // No idempotency key at Postmark: the key travels as metadata, for the lookup after an ambiguous attempt.
      return { intentHeader: sent.Headers.find((h) => h.Name === 'X-Leasehold-Intent-Id')?.Value, key: sent.Metadata.idempotency_key ?? null };
    },
    arrange: {
      async rateLimited() {
        fake.queue({ status: 429, body: { ErrorCode: 429, Message: 'Rate limit exceeded' } });
        return { gateway: gateway() };
      },
      rejected: async () => ({ gateway: gateway(), message: { to: REFUSED } }), // the fake's inactive recipient (406)
      async unknown() {
        fake.queue({ status: 500, body: { ErrorCode: 0, Message: 'Internal error' } });
        return { gateway: gateway() };
      },
      paused: async () => ({ gateway: gateway('wrong-token') }),
    },
  };
})();

const ses: Adapter = (() => {
  let local: SesLocal;
  let errors: FakeHttpServer;
  const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
  const opened: SesGateway[] = [];
  const gateway = (endpoint: string) => {
    const g = new SesGateway({ region: 'us-east-1', endpoint, credentials });
    opened.push(g);
    return g;
  };
  // aws-ses-v2-local accepts everything; the documented error answers come from a server that replies as SES does.
  const answering = (status: number, type: string, text: string) => async () => {
    errors.queue(sesError(status, type, text));
    return { gateway: gateway(errors.url) };
  };
  return {
    name: 'ses',
    async start() {
      local = await startSesLocal();
      errors = sesErrorServer();
      await errors.start();
    },
    async stop() {
      for (const g of opened) await g.close();
      await errors.stop();
      await local.stop();
    },
    gateway: () => gateway(local.url),
    async received(_m, receipt) {
      const stored = (await local.emails()).find((e) => e.messageId === receipt)!;
      // SES has no idempotency key (the outbox flags its possible duplicates instead).
      return { intentHeader: stored.headers?.find((h) => h.name === 'X-Leasehold-Intent-Id')?.value, key: null };
    },
    arrange: {
      rateLimited: answering(429, 'TooManyRequestsException', 'Too many requests have been made to the operation.'),
      rejected: async () => ({
        ...(await answering(400, 'MessageRejected', `Address blacklisted: ${REFUSED}.`)()),
        message: { to: REFUSED },
      }),
      unknown: answering(500, 'InternalFailure', 'Internal failure'),
      paused: answering(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.'),
    },
  };
})();

const smtp: Adapter = (() => {
  let server: FakeSmtp;
  const auth = { user: 'leasehold', pass: 'pw' };
  const SLOW = 'slow.customer@example.net';
  return {
    name: 'smtp',
    async start() {
      server = new FakeSmtp({ auth });
      server.rule(REFUSED, { stage: 'rcpt', responseCode: 550, message: `5.1.1 <${REFUSED}>: Recipient address rejected: User unknown` });
      server.rule(SLOW, { stage: 'data', hold: true });
      await server.start();
    },
    async stop() {
      server.release();
      await server.stop();
    },
    gateway: () => new SmtpGateway({ url: server.url }),
    async received(_m, receipt) {
      const mail = server.received.find((r) => r.headers['message-id'] === receipt)!;
      // SMTP has no idempotency key (the outbox flags its possible duplicates instead).
      return { intentHeader: mail.headers['x-leasehold-intent-id'], key: null };
    },
    arrange: {
      rateLimited: { none: 'SMTP has no rate-limit answer: a 4xx "try later" is a plain failure, retried with back-off' },
      rejected: async () => ({ gateway: new SmtpGateway({ url: server.url }), message: { to: REFUSED } }),
      // The message is fully transferred, the final reply held back: the timeout cannot know whether it was queued.
      unknown: async () => ({
        gateway: new SmtpGateway({ url: server.url }),
        message: { to: SLOW },
        during: async (abort) => {
          await server.messageHeld();
          abort(new Error('send timeout'));
        },
      }),
      paused: async () => ({ gateway: new SmtpGateway({ url: server.urlWith({ user: auth.user, pass: 'wrong' }) }) }),
    },
  };
})();

const adapters: Adapter[] = [sandbox, resend, postmark, ses, smtp];

async function sendArranged(adapter: Adapter, answer: Answer): Promise<{ result: SendResult; m: EmailMessage }> {
  const arrange = adapter.arrange[answer];
  if (typeof arrange !== 'function') throw new Error(`${adapter.name} has no ${answer} answer`);
  const arranged = await arrange();
  const m = message(next(adapter.name), arranged.message);
  const controller = new AbortController();
  const signal = arranged.context?.signal ? AbortSignal.any([controller.signal, arranged.context.signal]) : controller.signal;
  const sending = arranged.gateway.send(m, context({ ...arranged.context, signal }));
  await arranged.during?.((reason) => controller.abort(reason));
  return { result: await sending, m };
}

const has = (adapter: Adapter, answer: Answer) => typeof adapter.arrange[answer] === 'function';
const why = (adapter: Adapter, answer: Answer) => {
  const arrange = adapter.arrange[answer];
  if (typeof arrange !== 'function') return ` (skipped: ${arrange.none})`;
  const breach = adapter.breaches?.[answer];
  return breach ? ` (known breach, expected to fail: ${breach})` : '';
};
/** The test function for one answer: skipped where the provider has none, an expected failure for a known breach. */
function check(adapter: Adapter, answer: Answer) {
  const test = it.skipIf(!has(adapter, answer));
  return adapter.breaches?.[answer] ? test.fails : test;
}

/** No recipient address anywhere in what the adapter returns: reasons reach logs and the attempts table. */
function expectNoAddress(result: SendResult, m: EmailMessage): void {
  const text = JSON.stringify(result);
  expect(text).not.toContain(m.to);
  expect(text).not.toMatch(/[^\s@<>"]+@[^\s@<>"]+\.[a-z]{2,}/i);
}

describe.each(adapters)('$name keeps the EmailGateway contract', (adapter) => {
  beforeAll(() => adapter.start());
  afterAll(() => adapter.stop());

  it('an accepted send returns a receipt; the intent header and idempotency key reach the provider as it carries them', async () => {
    const gateway = adapter.gateway();
    const m = message(next(adapter.name));
    const result = await gateway.send(m, context());
    expect(result).toMatchObject({ kind: 'accepted', receipt: expect.any(String) });
    if (result.kind !== 'accepted') return;
    expect(result.receipt).not.toBe('');
    const sent = await adapter.received(m, result.receipt);
    expect(sent.intentHeader).toBe(m.intentId);
    // A provider that deduplicates must be given the key; one that holds no key must not claim to.
    if (sent.key === null) expect(gateway.idempotent).toBe(false);
    else expect(sent.key).toBe(m.idempotencyKey);
  });

  check(adapter, 'rateLimited')(`a 429 or throttle is rate-limited with a retry-after${why(adapter, 'rateLimited')}`, async () => {
    const { result, m } = await sendArranged(adapter, 'rateLimited');
    expect(result).toMatchObject({ kind: 'rate_limited', retryAfterMs: expect.any(Number) });
    if (result.kind === 'rate_limited') expect(result.retryAfterMs).toBeGreaterThan(0);
    expectNoAddress(result, m);
  });

  check(adapter, 'rejected')(`a permanent refusal of the message is rejected, with no recipient address in its reason${why(adapter, 'rejected')}`, async () => {
    const { result, m } = await sendArranged(adapter, 'rejected');
    expect(result).toMatchObject({ kind: 'rejected', reason: expect.any(String) });
    expectNoAddress(result, m);
  });

  check(adapter, 'unknown')(`a 5xx or a timeout is failed with outcomeUnknown: the message may have arrived${why(adapter, 'unknown')}`, async () => {
    const { result, m } = await sendArranged(adapter, 'unknown');
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true });
    expectNoAddress(result, m);
  });

  check(adapter, 'paused')(`a bad credential (or an account-level refusal) pauses delivery${why(adapter, 'paused')}`, async () => {
    const { result, m } = await sendArranged(adapter, 'paused');
    expect(result).toMatchObject({ kind: 'paused', reason: expect.any(String) });
    expectNoAddress(result, m);
  });

  it('close() may be called twice', async () => {
    const gateway = adapter.gateway();
    const twice = async () => {
      await gateway.close?.();
      await gateway.close?.();
    };
    await expect(twice()).resolves.toBeUndefined();
  });
});
