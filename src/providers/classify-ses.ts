import type { SendResult } from './gateway.js';
import { redactAddresses } from './provider-common.js';

/**
 * Amazon SES v2 SendEmail errors, classified. Exception names follow the
 * SendEmail API reference
 * (https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_SendEmail.html#API_SendEmail_Errors);
 * the quota messages follow
 * https://docs.aws.amazon.com/ses/latest/dg/manage-sending-quotas-errors.html
 * ("Daily message quota exceeded" / "Maximum sending rate exceeded").
 */
export interface SesErrorInput {
  /** The exception name (`MessageRejected`, `TooManyRequestsException` ...). */
  name: string | undefined;
  message: string | undefined;
  /** HTTP status, when a response came back. */
  status: number | undefined;
  /** `server` for 5xx-class faults reported by the SDK. */
  fault?: 'client' | 'server' | undefined;
  /** No response: the request provably never left (connection refused, DNS). */
  neverSent?: boolean;
  /** Our send timeout fired. */
  aborted?: boolean;
}

/** SES gives no timing for its per-second rate; one second is its own window. */
export const SES_RATE_RETRY_MS = 1000;

/**
 * The daily quota is a rolling 24-hour window (the SES guide: "the maximum
 * number of emails you can send in a 24-hour period"), not a calendar day:
 * capacity comes back continuously as sends from 24 h ago age out, and SES
 * says nothing about when. Pausing until UTC midnight could waste most of a
 * day; pausing 24 h always would too. AWS's guidance is to wait "up to 10
 * minutes" and try again, so the pause lifts after 10 minutes and the first
 * send then probes the quota (pausing again if it is still exhausted).
 */
export const SES_DAILY_QUOTA_PAUSE_MS = 10 * 60_000;

const DAILY_QUOTA = /daily message quota exceeded/i;
const SENDING_RATE = /maximum sending rate exceeded|rate exceeded|throttl/i;
/** MessageRejected for an unverified identity (sandbox or sender): the account setup, not this message. */
const UNVERIFIED_IDENTITY = /not verified|not authorized to send/i;

export function classifySesError(input: SesErrorInput): SendResult {
  const name = input.name ?? '';
  const message = input.message ?? '';
  const detail = {
    ...(input.status !== undefined ? { providerStatus: input.status } : {}),
    ...(name ? { providerCode: name } : {}),
  };
  const why = (text: string) => (message ? `SES: ${text}: ${redactAddresses(message)}` : `SES: ${text}`);

  if (DAILY_QUOTA.test(message)) {
    return { kind: 'paused', reason: why('daily sending quota exhausted'), resumeAfterMs: SES_DAILY_QUOTA_PAUSE_MS, ...detail };
  }
  // The quota messages decide whatever exception name carries them.
  if (/maximum sending rate exceeded/i.test(message)) {
    return { kind: 'rate_limited', retryAfterMs: SES_RATE_RETRY_MS, reason: why('sending rate exceeded'), ...detail };
  }
  switch (name) {
    case 'TooManyRequestsException':
    case 'ThrottlingException':
    case 'Throttling':
      return { kind: 'rate_limited', retryAfterMs: SES_RATE_RETRY_MS, reason: why('sending rate exceeded'), ...detail };
    case 'MessageRejected':
      if (UNVERIFIED_IDENTITY.test(message)) {
        return { kind: 'paused', reason: why('identity not verified (sandbox account or unverified sender)'), ...detail };
      }
      return { kind: 'rejected', reason: why('message rejected'), ...detail };
    case 'AccountSuspendedException':
      return { kind: 'paused', reason: why('account suspended'), ...detail };
    case 'SendingPausedException':
      return { kind: 'paused', reason: why('sending paused for the account or configuration set'), ...detail };
    case 'MailFromDomainNotVerifiedException':
      return { kind: 'paused', reason: why('MAIL FROM domain not verified'), ...detail };
    case 'NotFoundException':
      return { kind: 'paused', reason: why('configuration set or identity not found'), ...detail };
    case 'LimitExceededException':
      return { kind: 'paused', reason: why('account limit exceeded'), ...detail };
    case 'UnrecognizedClientException':
    case 'InvalidClientTokenId':
    case 'InvalidSignatureException':
    case 'SignatureDoesNotMatch':
    case 'AccessDeniedException':
    case 'ExpiredTokenException':
    case 'CredentialsProviderError':
      return { kind: 'paused', reason: why('credentials refused (check the AWS credentials and region)'), ...detail };
    case 'BadRequestException':
      return { kind: 'rejected', reason: why('bad request'), ...detail };
    default:
      break;
  }
  if (input.status === 429 || SENDING_RATE.test(message)) {
    return { kind: 'rate_limited', retryAfterMs: SES_RATE_RETRY_MS, reason: why('sending rate exceeded'), ...detail };
  }
  if (input.status === 401 || input.status === 403) {
    return { kind: 'paused', reason: why('credentials refused (check the AWS credentials and region)'), ...detail };
  }
  if (input.status === undefined) {
    if (input.neverSent) return { kind: 'failed', reason: why('could not connect'), outcomeUnknown: false, neverSent: true, ...detail };
    return {
      kind: 'failed',
      reason: input.aborted ? 'SES: send timed out (the message may have been accepted)' : why('no answer (network error)'),
      outcomeUnknown: true,
      ...detail,
    };
  }
  if (input.status >= 500 || input.fault === 'server') {
    return { kind: 'failed', reason: why(`server error ${input.status}`), outcomeUnknown: true, ...detail };
  }
  return { kind: 'failed', reason: why(`unexpected answer ${input.status}`), outcomeUnknown: false, ...detail };
}
