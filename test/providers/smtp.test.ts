import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SMTP_CONNECTION_PAUSE_MS } from '../../src/providers/classify-smtp.js';
import { SmtpGateway } from '../../src/providers/smtp.js';
import { FakeSmtp } from '../helpers/fake-smtp.js';
import { context, message } from '../helpers/message.js';

let smtp: FakeSmtp;
let gateway: SmtpGateway;
const auth = { user: 'leasehold', pass: 's3cret' };
beforeAll(async () => {
  smtp = new FakeSmtp({ auth });
  await smtp.start();
  gateway = new SmtpGateway({ url: smtp.url });
  smtp.rule('unknown@example.net', { stage: 'rcpt', responseCode: 550, message: '5.1.1 No such user here' });
  smtp.rule('moved@example.net', { stage: 'rcpt', responseCode: 551, message: '5.1.6 User not local' });
  smtp.rule('badsyntax@example.net', { stage: 'rcpt', responseCode: 553, message: '5.1.3 Bad recipient address syntax' });
  smtp.rule('busy@example.net', { stage: 'rcpt', responseCode: 450, message: '4.2.1 Mailbox busy, try again later' });
  smtp.rule('greylisted@example.net', { stage: 'data', responseCode: 451, message: '4.7.1 Greylisted, please retry' });
  smtp.rule('full@example.net', { stage: 'rcpt', responseCode: 452, message: '4.3.1 Insufficient system storage' });
  smtp.rule('spam@example.net', { stage: 'data', responseCode: 554, message: '5.6.0 Message content rejected' });
  smtp.rule('slow@example.net', { stage: 'data', hold: true });
  smtp.rule('blocked-sender@example.com', { stage: 'mail', responseCode: 553, message: '5.7.1 Sender address rejected' });
});
afterAll(async () => {
  await gateway.close();
  await smtp.stop();
});

const to = (address: string, id: string) => message(id, { to: address });

describe('SMTP adapter against a real SMTP server', () => {
  it('accepted: the message arrives with its subject, body and intent header', async () => {
    const m = message('m1');
    const result = await gateway.send(m, context());
    expect(result).toMatchObject({ kind: 'accepted', providerStatus: 250 });
    const mail = smtp.received.at(-1)!;
    expect(result.kind === 'accepted' && result.receipt).toBe(mail.headers['message-id']);
    expect(mail.to).toEqual([m.to]);
    expect(mail.from).toBe('support@example.com');
    expect(mail.subject).toBe(m.subject);
    expect(mail.headers['x-leasehold-intent-id']).toBe(m.intentId);
    expect(mail.text).toContain('Callback, Tue 10:00');
    expect(mail.text).toContain('we have released it');
  });

  it.each([
    ['unknown@example.net', 550],
    ['moved@example.net', 551],
    ['badsyntax@example.net', 553],
  ])('a %s refused at RCPT TO (%i) is rejected', async (address, code) => {
    expect(await gateway.send(to(address, `m-${code}`), context())).toMatchObject({ kind: 'rejected', providerStatus: code });
  });

  it('554 after DATA (content refused) is rejected', async () => {
    expect(await gateway.send(to('spam@example.net', 'm-spam'), context())).toMatchObject({ kind: 'rejected', providerStatus: 554 });
  });

  it.each([
    ['busy@example.net', 450],
    ['full@example.net', 452],
    ['greylisted@example.net', 451],
  ])('a 4xx for %s (%i) is a retry with nothing sent', async (address, code) => {
    expect(await gateway.send(to(address, `m-${code}`), context())).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
      providerStatus: code,
    });
  });

  it('5xx to MAIL FROM (the sender) pauses delivery', async () => {
    expect(await gateway.send(message('m-sender', { from: 'blocked-sender@example.com' }), context())).toMatchObject({
      kind: 'paused',
      providerStatus: 553,
    });
  });

  it('wrong credentials (535) pause delivery', async () => {
    const wrong = new SmtpGateway({ url: smtp.urlWith({ user: 'leasehold', pass: 'wrong' }) });
    expect(await wrong.send(message('m-auth'), context())).toMatchObject({ kind: 'paused', providerStatus: 535 });
  });

  it('a refused connection pauses delivery for a short while', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const nowhere = new SmtpGateway({ url: `smtp://127.0.0.1:${port}` });
    expect(await nowhere.send(message('m-refused'), context())).toMatchObject({ kind: 'paused', resumeAfterMs: SMTP_CONNECTION_PAUSE_MS });
  });

  it('a server that closes every connection before its greeting pauses delivery for a short while', async () => {
    const closer = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', () => resolve()));
    const g = new SmtpGateway({ url: `smtp://127.0.0.1:${(closer.address() as net.AddressInfo).port}` });
    try {
      // nodemailer's pool tries a few fresh connections first (about 2.5 s of its own back-off).
      expect(await g.send(message('m-closer'), context())).toMatchObject({ kind: 'paused', resumeAfterMs: SMTP_CONNECTION_PAUSE_MS });
    } finally {
      await g.close();
      await new Promise((resolve) => closer.close(resolve));
    }
  });

  it('a timeout after DATA is outcome-unknown, and the server may still take the message', async () => {
    const m = to('slow@example.net', 'm-slow');
    const before = smtp.received.length;
    const timeout = new AbortController();
    const sending = gateway.send(m, context({ signal: timeout.signal }));
    await smtp.messageHeld(); // the whole message arrived; the final reply is held back
    timeout.abort(new Error('send timeout'));
    expect(await sending).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/after DATA/) });
    // The server finishes and queues it anyway: why a retry is a possible duplicate.
    smtp.release();
    for (let i = 0; i < 100 && smtp.received.length === before; i++) await new Promise((r) => setTimeout(r, 5));
    expect(smtp.received.length).toBe(before + 1);
  });

  it('a timeout before DATA is a plain retry (nothing was sent)', async () => {
    const timeout = new AbortController();
    timeout.abort(new Error('send timeout'));
    expect(await gateway.send(message('m-early'), context({ signal: timeout.signal }))).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
  });
});

describe('SMTP connection pool (one per gateway) against a real SMTP server', () => {
  let server: FakeSmtp;
  const gateways: SmtpGateway[] = [];
  const pooled = (options: { maxConnections?: number; maxMessages?: number } = {}) => {
    const g = new SmtpGateway({ url: server.url, ...options });
    gateways.push(g);
    return g;
  };
  /** Settles `promise`, or fails the test after `ms` (socket I/O, not time the test moves). */
  const within = <T>(promise: Promise<T>, ms = 2000): Promise<T> =>
    Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))]);

  beforeAll(async () => {
    server = new FakeSmtp();
    await server.start();
    server.rule('drop-in-data@example.net', { stage: 'data', drop: true });
    server.rule('drop-at-mail@example.com', { stage: 'mail', drop: true });
    server.rule('drop-at-rcpt@example.net', { stage: 'rcpt', drop: true });
    server.rule('held@example.net', { stage: 'data', hold: true });
  });
  afterEach(async () => {
    for (const g of gateways.splice(0)) await g.close();
    server.release();
    await within(server.openAtMost(0));
    server.resetCounts();
  });
  afterAll(() => server.stop());

  it('several messages in a row share one connection', async () => {
    const g = pooled();
    for (let i = 0; i < 5; i++) expect(await g.send(message(`reuse-${i}`), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(1);
  });

  it('concurrent sends use at most maxConnections connections', async () => {
    const g = pooled({ maxConnections: 2 });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => g.send(message(`wide-${i}`), context())));
    expect(results.map((r) => r.kind)).toEqual(Array(8).fill('accepted'));
    expect(server.opened).toBe(2);
    expect(server.peakOpen).toBe(2);
  });

  it('a connection is replaced by a fresh one after maxMessages', async () => {
    const g = pooled({ maxConnections: 1, maxMessages: 2 });
    for (let i = 0; i < 4; i++) expect(await g.send(message(`renew-${i}`), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(2);
  });

  it('a connection dropped mid-DATA fails only its message (outcome unknown); the others are accepted', async () => {
    const g = pooled({ maxConnections: 3 });
    const before = server.received.length;
    const [first, dropped, third] = await Promise.all([
      g.send(message('mid-1'), context()),
      g.send(to('drop-in-data@example.net', 'mid-2'), context()),
      g.send(message('mid-3'), context()),
    ]);
    expect(server.opened).toBe(3);
    expect(first).toMatchObject({ kind: 'accepted' });
    expect(third).toMatchObject({ kind: 'accepted' });
    expect(dropped).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/after DATA/) });
    expect(dropped).not.toHaveProperty('neverSent');
    expect(server.received.length).toBe(before + 2);
  });

  it('after a dropped connection the next message goes out on a fresh one', async () => {
    const g = pooled({ maxConnections: 1 });
    expect(await g.send(to('drop-in-data@example.net', 'fresh-1'), context())).toMatchObject({ kind: 'failed', outcomeUnknown: true });
    expect(server.opened).toBe(1);
    expect(await g.send(message('fresh-2'), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(2);
  });

  it.each([
    ['after MAIL FROM', message('early-drop', { from: 'drop-at-mail@example.com' })],
    ['after RCPT TO', to('drop-at-rcpt@example.net', 'early-drop')],
  ])('a connection dropped %s fails only its message, as never sent (it may fail over)', async (_when, dropped) => {
    const g = pooled({ maxConnections: 3 });
    const results = await Promise.all([g.send(message('early-1'), context()), g.send(dropped, context()), g.send(message('early-3'), context())]);
    expect(results[0]).toMatchObject({ kind: 'accepted' });
    expect(results[2]).toMatchObject({ kind: 'accepted' });
    expect(results[1]).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true });
  });

  it('a dropped reused connection before DATA still fails as never sent (nodemailer retries it once on a fresh connection)', async () => {
    const g = pooled({ maxConnections: 1 });
    expect(await g.send(message('reused-1'), context())).toMatchObject({ kind: 'accepted' });
    expect(await g.send(message('reused-2', { from: 'drop-at-mail@example.com' }), context())).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
      neverSent: true,
    });
    expect(await g.send(message('reused-3'), context())).toMatchObject({ kind: 'accepted' });
  });

  it("another connection's 354 is not this message's: a drop before DATA stays never-sent while a neighbour is mid-DATA", async () => {
    const g = pooled({ maxConnections: 2 });
    const held = g.send(to('held@example.net', 'attr-held'), context());
    await server.messageHeld(); // the neighbour's DATA is done, its final reply held back
    expect(await g.send(message('attr-drop', { from: 'drop-at-mail@example.com' }), context())).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
      neverSent: true,
    });
    server.release();
    expect(await held).toMatchObject({ kind: 'accepted' });
  });

  it('an abort after DATA ends that send at once and closes only its connection', async () => {
    const g = pooled({ maxConnections: 2 });
    const timeout = new AbortController();
    const held = g.send(to('held@example.net', 'abort-held'), context({ signal: timeout.signal }));
    await server.messageHeld();
    expect(await g.send(message('abort-other-1'), context())).toMatchObject({ kind: 'accepted' });
    timeout.abort(new Error('send timeout'));
    // Settled while the server still holds its reply back: the abort did not wait for it.
    expect(await held).toMatchObject({ kind: 'failed', outcomeUnknown: true, reason: expect.stringMatching(/timed out after DATA/) });
    await within(server.openAtMost(1));
    expect(await g.send(message('abort-other-2'), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(2);
  });

  it('an abort while waiting for a connection leaves the queue at once, as never sent, and costs no connection', async () => {
    const g = pooled({ maxConnections: 1 });
    const held = g.send(to('held@example.net', 'queue-held'), context());
    await server.messageHeld(); // the one connection is busy
    const timeout = new AbortController();
    const queued = g.send(message('queue-waiting'), context({ signal: timeout.signal }));
    timeout.abort(new Error('send timeout'));
    expect(await queued).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true, reason: expect.stringMatching(/before DATA/) });
    server.release();
    expect(await held).toMatchObject({ kind: 'accepted' });
    expect(await g.send(message('queue-next'), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(1);
  });

  it('close() ends the pooled connections; a later send opens a new pool', async () => {
    const g = pooled({ maxConnections: 2 });
    await Promise.all([g.send(message('close-1'), context()), g.send(message('close-2'), context())]);
    expect(server.open).toBe(2); // idle, kept for the next messages
    await g.close();
    await within(server.openAtMost(0));
    expect(await g.send(message('close-3'), context())).toMatchObject({ kind: 'accepted' });
    expect(server.opened).toBe(3);
  });

  it('close() lets the message on the wire finish and fails the ones still waiting as never sent', async () => {
    const g = pooled({ maxConnections: 1 });
    const held = g.send(to('held@example.net', 'closing-held'), context());
    await server.messageHeld();
    const waiting = g.send(message('closing-waiting'), context());
    await g.close();
    expect(await waiting).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true });
    server.release();
    expect(await held).toMatchObject({ kind: 'accepted' });
    await within(server.openAtMost(0));
  });

  it('close() before any send has nothing to close', async () => {
    await pooled().close();
    expect(server.opened).toBe(0);
  });
});
