import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
afterAll(() => smtp.stop());

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
