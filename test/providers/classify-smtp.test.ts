import { describe, expect, it } from 'vitest';
import { classifySmtpError, SMTP_CONNECTION_PAUSE_MS, type SmtpErrorInput } from '../../src/providers/classify-smtp.js';

const reply = (responseCode: number, response: string, command: string, code = 'EENVELOPE'): SmtpErrorInput => ({
  code,
  responseCode,
  response,
  command,
  dataStarted: command === 'DATA',
});

describe('SMTP classification table', () => {
  it.each([
    [421, '421 4.3.2 Service shutting down', 'RCPT TO'],
    [450, '450 4.2.1 Mailbox busy', 'RCPT TO'],
    [451, '451 4.3.0 Local error in processing', 'DATA'],
    [452, '452 4.3.1 Insufficient system storage', 'MAIL FROM'],
  ])('%i is a transient failure, retried (the server did not take it)', (code, response, command) => {
    expect(classifySmtpError(reply(code, response, command))).toMatchObject({ kind: 'failed', outcomeUnknown: false, providerStatus: code });
  });

  it.each([
    [550, '550 5.1.1 No such user', 'RCPT TO'],
    [551, '551 5.1.6 User not local', 'RCPT TO'],
    [553, '553 5.1.3 Bad recipient address syntax', 'RCPT TO'],
    [550, '550 5.7.1 Recipient refuses mail', 'RCPT TO'],
  ])('%i about the recipient rejects the message', (code, response, command) => {
    const result = classifySmtpError(reply(code, response, command));
    expect(result).toMatchObject({ kind: 'rejected', providerStatus: code });
    expect(result.kind === 'rejected' && result.reason).toMatch(/recipient/);
  });

  it('a 5.1.x enhanced status rejects even on another reply code', () => {
    expect(classifySmtpError(reply(554, '554 5.1.0 Address rejected', 'DATA'))).toMatchObject({ kind: 'rejected', providerCode: '5.1.0' });
  });

  it('554 at DATA (content refused) rejects the message', () => {
    expect(classifySmtpError(reply(554, '554 5.6.0 Message content rejected', 'DATA')).kind).toBe('rejected');
  });

  it('5xx to MAIL FROM (the sender) pauses delivery', () => {
    expect(classifySmtpError(reply(553, '553 5.7.1 Sender address rejected', 'MAIL FROM')).kind).toBe('paused');
  });

  it('authentication failures (EAUTH, 535) pause delivery', () => {
    expect(classifySmtpError({ code: 'EAUTH', responseCode: 535, response: '535 5.7.8 Authentication credentials invalid', command: 'AUTH PLAIN', dataStarted: false })).toMatchObject({
      kind: 'paused',
    });
    expect(classifySmtpError({ code: 'EAUTH', responseCode: undefined, response: undefined, command: 'API', dataStarted: false }).kind).toBe('paused');
    expect(classifySmtpError(reply(530, '530 5.7.0 Authentication required', 'MAIL FROM')).kind).toBe('paused');
  });

  it('a refused connection pauses delivery for a short while', () => {
    expect(
      classifySmtpError({ code: 'ESOCKET', originalCode: 'ECONNREFUSED', responseCode: undefined, response: undefined, command: 'CONN', dataStarted: false }),
    ).toMatchObject({ kind: 'paused', resumeAfterMs: SMTP_CONNECTION_PAUSE_MS });
    expect(classifySmtpError({ code: 'ECONNREFUSED', responseCode: undefined, response: undefined, command: undefined, dataStarted: false }).kind).toBe('paused');
  });

  it('a 5xx greeting pauses delivery', () => {
    expect(classifySmtpError({ code: 'EPROTOCOL', responseCode: 554, response: '554 No SMTP service here', command: 'CONN', dataStarted: false }).kind).toBe('paused');
  });

  it('a connection closed before the session was open pauses delivery (the server may be restarting)', () => {
    const closed = { code: 'ECONNECTION', responseCode: undefined, response: undefined, command: 'CONN', dataStarted: false };
    expect(classifySmtpError(closed)).toMatchObject({ kind: 'paused', resumeAfterMs: SMTP_CONNECTION_PAUSE_MS });
    // The pool's own give-up after the server closed every try before the greeting.
    expect(classifySmtpError({ ...closed, command: undefined })).toMatchObject({ kind: 'paused', resumeAfterMs: SMTP_CONNECTION_PAUSE_MS });
  });

  it("a connection lost after the session was open, before DATA, is that connection's failure: a retry, never sent", () => {
    const lost = { code: 'ECONNECTION', responseCode: undefined, response: undefined, command: 'CONN', dataStarted: false, sessionOpen: true };
    expect(classifySmtpError(lost)).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true });
    expect(classifySmtpError({ ...lost, command: undefined })).toMatchObject({ kind: 'failed', outcomeUnknown: false, neverSent: true });
    expect(classifySmtpError({ ...lost, dataStarted: true })).toMatchObject({ kind: 'failed', outcomeUnknown: true });
    expect(classifySmtpError({ ...lost, dataStarted: true })).not.toHaveProperty('neverSent');
  });

  it('a timeout after DATA is outcome-unknown', () => {
    expect(classifySmtpError({ code: 'ETIMEDOUT', responseCode: undefined, response: undefined, command: 'CONN', dataStarted: true })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
    expect(classifySmtpError({ code: 'EABORT', responseCode: undefined, response: undefined, command: undefined, dataStarted: true, aborted: true })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
  });

  it('a timeout before DATA is a plain retry', () => {
    expect(classifySmtpError({ code: 'ETIMEDOUT', responseCode: undefined, response: undefined, command: 'CONN', dataStarted: false })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
  });
});
