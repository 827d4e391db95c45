import type { SendResult } from './gateway.js';
import { redactAddresses } from './provider-common.js';

/**
 * Postmark's answers, classified by API ErrorCode
 * (https://postmarkapp.com/developer/api/overview#error-codes) and HTTP
 * status. Postmark answers 422 with an ErrorCode for request problems, 401
 * for a bad token, 429 when sending too fast (with no timing header), and
 * 500/503 when it is broken or in maintenance.
 */
export interface PostmarkErrorInput {
  /** HTTP status; null when no response came back. */
  status: number | null;
  /** Postmark's ErrorCode from the JSON body (0 or undefined when absent). */
  errorCode: number | undefined;
  message: string | undefined;
  /** No response: the request provably never left (connection refused, DNS). */
  neverSent?: boolean;
  /** Consecutive 429 answers this adapter has seen, including this one. */
  consecutiveRateLimits?: number;
}

/** The adapter's own backoff for 429: 1 s, 2 s, 4 s ... capped at 60 s (the worker adds jitter). */
export function postmarkRateLimitBackoffMs(consecutive: number): number {
  const n = Math.max(1, Math.floor(consecutive));
  return Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 16));
}

/** ErrorCode -> outcome, for the codes a send can answer with. */
export const POSTMARK_ERROR_CODES: Readonly<Record<number, { kind: 'rejected' | 'paused' | 'failed'; reason: string }>> = {
  10: { kind: 'paused', reason: 'bad or missing server token (check POSTMARK_SERVER_TOKEN)' },
  100: { kind: 'failed', reason: 'Postmark is in maintenance' },
  300: { kind: 'rejected', reason: 'invalid email request (recipient or content)' },
  400: { kind: 'paused', reason: 'sender signature not found (check EMAIL_FROM)' },
  401: { kind: 'paused', reason: 'sender signature not confirmed' },
  405: { kind: 'paused', reason: 'not allowed to send (account out of credits or sending disabled)' },
  406: { kind: 'rejected', reason: 'inactive recipient (bounced, complained or suppressed)' },
  412: { kind: 'paused', reason: 'account is pending approval' },
  413: { kind: 'paused', reason: 'account may not send' },
};

export function classifyPostmarkError(input: PostmarkErrorInput): SendResult {
  const { status, message = '' } = input;
  const errorCode = input.errorCode ?? 0;
  const detail = {
    ...(status !== null ? { providerStatus: status } : {}),
    ...(errorCode ? { providerCode: String(errorCode) } : {}),
  };
  const why = (text: string) => (message ? `Postmark: ${text}: ${redactAddresses(message)}` : `Postmark: ${text}`);

  if (status === null) {
    return input.neverSent
      ? { kind: 'failed', reason: why('could not connect'), outcomeUnknown: false, neverSent: true, ...detail }
      : { kind: 'failed', reason: why('no answer (network error or timeout)'), outcomeUnknown: true, ...detail };
  }
  // Rate limiting arrives as HTTP 429 (ErrorCode 429 "Rate Limit Exceeded" in the same table).
  if (status === 429 || errorCode === 429) {
    return {
      kind: 'rate_limited',
      retryAfterMs: postmarkRateLimitBackoffMs(input.consecutiveRateLimits ?? 1),
      reason: why('rate limit exceeded'),
      ...detail,
    };
  }
  const known = POSTMARK_ERROR_CODES[errorCode];
  if (known?.kind === 'failed') return { kind: 'failed', reason: why(known.reason), outcomeUnknown: false, ...detail };
  // 406: Postmark will not send to this address again (it bounced or complained there): suppress it here too.
  if (known?.kind === 'rejected' && errorCode === 406) return { kind: 'rejected', reason: why(known.reason), suppress: true, ...detail };
  if (known) return { kind: known.kind, reason: why(known.reason), ...detail };
  if (status === 401) return { kind: 'paused', reason: why('unauthorized (check POSTMARK_SERVER_TOKEN)'), ...detail };
  if (status === 500 || status === 503 || status >= 500) {
    // A server error after the request arrived: Postmark may have queued it.
    return { kind: 'failed', reason: why(`server error ${status}`), outcomeUnknown: true, ...detail };
  }
  // Other 4xx / ErrorCodes (invalid JSON, forbidden attachment ...): retry
  // within the attempt budget rather than drop the message or stop the fleet.
  return { kind: 'failed', reason: why(`unexpected answer ${status}`), outcomeUnknown: false, ...detail };
}
