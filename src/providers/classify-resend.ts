import type { SendResult } from './gateway.js';
import { headerDelayMs, headerOf, msUntilNextUtcMidnight, redactAddresses } from './provider-common.js';

/**
 * Resend's answers, classified. Error names and statuses follow
 * https://resend.com/docs/api-reference/errors ; rate-limit timing follows
 * https://resend.com/docs/api-reference/rate-limit (`retry-after` and
 * `ratelimit-reset`, both in seconds).
 */
export interface ResendErrorInput {
  /** HTTP status; null when no response came back (network error, abort). */
  status: number | null;
  /** Resend's error `name` (e.g. `rate_limit_exceeded`). */
  name: string | undefined;
  message: string | undefined;
  headers: Record<string, string> | null | undefined;
  /** Our send timeout fired (the request may have reached Resend). */
  aborted?: boolean;
}

/** Used when a 429 carries neither `retry-after` nor `ratelimit-reset`. */
export const RESEND_DEFAULT_RETRY_MS = 1000;

function retryAfterMs(headers: ResendErrorInput['headers'], now: Date): number | undefined {
  return (
    headerDelayMs(headerOf(headers, 'retry-after'), now) ?? headerDelayMs(headerOf(headers, 'ratelimit-reset'), now)
  );
}

/** A validation_error about the sender: every message would fail the same way. */
const SENDER_PROBLEM = /\bfrom\b|domain is not verified|verify a domain|testing emails/i;
/** A validation_error about the recipient: only this message is at fault. */
const RECIPIENT_PROBLEM = /\bto\b|recipient|email address|invalid.*address/i;

/** Classify a Resend error response (anything but a 2xx with an id). */
export function classifyResendError(input: ResendErrorInput, now: Date = new Date()): SendResult {
  const { status, message = '' } = input;
  const name = input.name ?? '';
  const detail = { ...(status !== null ? { providerStatus: status } : {}), ...(name ? { providerCode: name } : {}) };
  const why = (text: string) => (message ? `${text}: ${redactAddresses(message)}` : text);

  if (status === null) {
    // The SDK folds every thrown fetch error into `application_error` with no
    // status, so "refused before sending" and "timed out after sending" look
    // alike. Both are marked outcome-unknown: with the Idempotency-Key the
    // retry is safe either way.
    return {
      kind: 'failed',
      reason: input.aborted ? 'send timed out waiting for Resend' : why('network error talking to Resend'),
      outcomeUnknown: true,
      ...detail,
    };
  }

  switch (name) {
    case 'rate_limit_exceeded':
      return {
        kind: 'rate_limited',
        retryAfterMs: retryAfterMs(input.headers, now) ?? RESEND_DEFAULT_RETRY_MS,
        reason: why('Resend rate limit exceeded'),
        ...detail,
      };
    case 'daily_quota_exceeded':
      // The daily quota (free plan) is counted per calendar day; without a
      // header saying otherwise the pause lifts at the next UTC midnight.
      return {
        kind: 'paused',
        reason: why('Resend daily sending quota exhausted'),
        resumeAfterMs: retryAfterMs(input.headers, now) ?? msUntilNextUtcMidnight(now),
        ...detail,
      };
    case 'monthly_quota_exceeded': {
      // Lifts only with a plan change or the next billing month (unknown here):
      // an operator resumes, unless Resend told us when.
      const resume = retryAfterMs(input.headers, now);
      return {
        kind: 'paused',
        reason: why('Resend monthly sending quota exhausted (upgrade the plan or wait for the next billing month)'),
        ...(resume !== undefined ? { resumeAfterMs: resume } : {}),
        ...detail,
      };
    }
    case 'missing_api_key':
    case 'invalid_api_key':
    case 'restricted_api_key':
    case 'invalid_access':
      return { kind: 'paused', reason: why('Resend refused the API key (check RESEND_API_KEY)'), ...detail };
    case 'invalid_from_address':
      return { kind: 'paused', reason: why('Resend refused the sender (check EMAIL_FROM)'), ...detail };
    case 'invalid_region':
    case 'not_found':
    case 'method_not_allowed':
      return { kind: 'paused', reason: why('Resend endpoint or account setting is wrong (check RESEND_BASE_URL)'), ...detail };
    case 'concurrent_idempotent_requests':
      // An earlier attempt with this key is still in flight at Resend: it may
      // yet be accepted, and retrying shortly with the same key is safe.
      return {
        kind: 'failed',
        reason: why('an earlier attempt with this idempotency key is still in progress at Resend'),
        outcomeUnknown: true,
        ...detail,
      };
    case 'invalid_idempotent_request':
      // Resend already holds a message for this key (within 24 h) but with a
      // different payload: the template or EMAIL_FROM changed between
      // attempts. Resending under a new key could deliver twice and pausing
      // the fleet would stop unrelated mail, so this intent ends here with the
      // reason shown; an operator can replay it deliberately (new key).
      return {
        kind: 'rejected',
        reason: why(
          'idempotency key already used with a different payload: Resend accepted an earlier attempt, not resent',
        ),
        ...detail,
      };
    case 'validation_error':
      if (status === 403 || SENDER_PROBLEM.test(message)) {
        return { kind: 'paused', reason: why('Resend refused the sender or domain (verify it in Resend)'), ...detail };
      }
      if (status === 401) {
        return { kind: 'paused', reason: why('Resend refused the API key (check RESEND_API_KEY)'), ...detail };
      }
      return {
        kind: 'rejected',
        reason: why(RECIPIENT_PROBLEM.test(message) ? 'Resend rejected the recipient' : 'Resend rejected the message'),
        ...detail,
      };
    case 'invalid_idempotency_key':
    case 'invalid_attachment':
    case 'invalid_parameter':
    case 'missing_required_field':
      return { kind: 'rejected', reason: why('Resend rejected the message'), ...detail };
    default:
      break;
  }

  if (status === 429) {
    return {
      kind: 'rate_limited',
      retryAfterMs: retryAfterMs(input.headers, now) ?? RESEND_DEFAULT_RETRY_MS,
      reason: why('Resend answered 429'),
      ...detail,
    };
  }
  if (status === 401 || status === 403) {
    return { kind: 'paused', reason: why('Resend refused the credentials'), ...detail };
  }
  if (status >= 500) {
    return { kind: 'failed', reason: why(`Resend server error ${status}`), outcomeUnknown: true, ...detail };
  }
  // An error Resend does not document: retry within the attempt budget
  // rather than drop the message or stop the fleet.
  return { kind: 'failed', reason: why(`unexpected Resend answer ${status}`), outcomeUnknown: false, ...detail };
}
