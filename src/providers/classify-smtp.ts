import type { SendResult } from './gateway.js';
import { redactAddresses } from './provider-common.js';

/**
 * SMTP replies and connection errors, classified. Reply codes follow RFC
 * 5321 section 4.2 (4yz transient, 5yz permanent) and enhanced status codes
 * RFC 3463 (5.1.x: addressing); error codes are nodemailer's
 * (https://nodemailer.com/errors/).
 */
export interface SmtpErrorInput {
  /** nodemailer's error code (EAUTH, ECONNECTION, ETIMEDOUT, EENVELOPE, EMESSAGE ...). */
  code: string | undefined;
  /** The system error behind it (ECONNREFUSED ...), kept by nodemailer as `originalCode`. */
  originalCode?: string | undefined;
  /** The SMTP reply code, when the server answered. */
  responseCode: number | undefined;
  /** The server's reply text (may contain an enhanced status code). */
  response: string | undefined;
  /** The SMTP command that failed (`CONN`, `AUTH PLAIN`, `MAIL FROM`, `RCPT TO`, `DATA` ...). */
  command: string | undefined;
  /** The server had said 354 (go ahead): the message itself was being transferred. */
  dataStarted: boolean;
  /**
   * This message's connection was open and past greeting and login, its
   * envelope on the way: the server was reachable, so a connection lost
   * now is that connection's failure (one of a pool), not a reason to pause.
   */
  sessionOpen?: boolean;
  /** Our send timeout fired. */
  aborted?: boolean;
}

/** A refused or dropped connection may be a restart: the pause lifts itself after this long. */
export const SMTP_CONNECTION_PAUSE_MS = 30_000;

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** 530 auth required, 534 mechanism too weak, 535 credentials invalid (RFC 4954). */
const AUTH_REPLIES = new Set([530, 534, 535]);
const AUTH_STATUSES = new Set(['5.7.0', '5.7.8']);

function enhancedStatus(response: string | undefined): string | undefined {
  return response?.match(/^\d{3}[ -](\d\.\d{1,3}\.\d{1,3})\b/)?.[1];
}

export function classifySmtpError(input: SmtpErrorInput): SendResult {
  const { code, responseCode, command = '' } = input;
  const response = input.response?.trim();
  const enhanced = enhancedStatus(response);
  const detail = {
    ...(responseCode ? { providerStatus: responseCode } : {}),
    providerCode: enhanced ?? code ?? 'unknown',
  };
  const why = (text: string) => (response ? `SMTP: ${text}: ${redactAddresses(response)}` : `SMTP: ${text}`);
  const upper = command.toUpperCase();

  // Authentication problems: every message would fail the same way.
  const authProblem =
    code === 'EAUTH' || code === 'ENOAUTH' || AUTH_REPLIES.has(responseCode ?? 0) || AUTH_STATUSES.has(enhanced ?? '');
  if (authProblem) {
    return { kind: 'paused', reason: why('authentication failed (check SMTP_URL credentials)'), ...detail };
  }

  if (responseCode !== undefined && responseCode >= 400 && responseCode < 500) {
    // Transient (421 closing, 450/451 try later, 452 storage): the server
    // did not take the message, so a retry cannot duplicate it.
    return { kind: 'failed', reason: why(`temporary failure ${responseCode}`), outcomeUnknown: false, ...detail };
  }

  if (responseCode !== undefined && responseCode >= 500) {
    if (upper === 'CONN' || upper.startsWith('EHLO') || upper.startsWith('HELO') || upper === 'STARTTLS') {
      return { kind: 'paused', reason: why('server refused the session'), ...detail };
    }
    if (upper.startsWith('MAIL')) {
      // About the sender (553 sender not allowed, 5.7.1 relay denied for it).
      return { kind: 'paused', reason: why('server refused the sender (check EMAIL_FROM)'), ...detail };
    }
    // RCPT TO (550 no such user, 551 not local, 553 bad mailbox, 5.1.x) or
    // the message at DATA (552 size, 554 content): this message is refused.
    const aboutRecipient = upper.startsWith('RCPT') || enhanced?.startsWith('5.1.') || [550, 551, 553].includes(responseCode);
    return { kind: 'rejected', reason: why(aboutRecipient ? 'recipient refused' : 'message refused'), ...detail };
  }

  // No reply code: the connection itself.
  const system = input.originalCode ?? code;
  // ECONNECTION without a command: nodemailer's pool gave up on a server
  // that kept closing its connections (before the greeting, unless sessionOpen).
  const unreachable =
    CONNECT_CODES.has(system ?? '') || (code === 'ECONNECTION' && (upper === 'CONN' || upper === '')) || code === 'EDNS' || code === 'ETLS';
  if (!input.dataStarted && !input.sessionOpen && unreachable) {
    return {
      kind: 'paused',
      reason: why(`cannot reach the SMTP server (${system ?? code})`),
      resumeAfterMs: SMTP_CONNECTION_PAUSE_MS,
      ...detail,
    };
  }
  if (input.dataStarted) {
    // The message was on the wire; the server may have queued it before the
    // connection dropped or the timeout fired.
    return {
      kind: 'failed',
      reason: input.aborted
        ? 'SMTP: send timed out after DATA (the message may have been accepted)'
        : why(`no final reply after DATA (${code ?? 'error'})`),
      outcomeUnknown: true,
      ...detail,
    };
  }
  return {
    kind: 'failed',
    reason: input.aborted ? 'SMTP: send timed out before DATA' : why(`connection problem before DATA (${code ?? 'error'})`),
    outcomeUnknown: false,
    // Nothing of the message reached the server before DATA.
    neverSent: true,
    ...detail,
  };
}
