import { describe, expect, it } from 'vitest';
import { classifySesError, SES_DAILY_QUOTA_PAUSE_MS, SES_RATE_RETRY_MS } from '../../src/providers/classify-ses.js';

describe('SES v2 classification table', () => {
  it('TooManyRequestsException is rate-limited', () => {
    expect(classifySesError({ name: 'TooManyRequestsException', message: 'Too many requests', status: 429 })).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: SES_RATE_RETRY_MS,
      providerStatus: 429,
      providerCode: 'TooManyRequestsException',
    });
  });

  it('"Maximum sending rate exceeded" is rate-limited whatever the exception name', () => {
    expect(classifySesError({ name: 'ThrottlingException', message: 'Maximum sending rate exceeded.', status: 400 }).kind).toBe('rate_limited');
    expect(classifySesError({ name: 'Throttling', message: 'Maximum sending rate exceeded.', status: 400 }).kind).toBe('rate_limited');
    expect(classifySesError({ name: 'LimitExceededException', message: 'Maximum sending rate exceeded.', status: 400 }).kind).toBe('rate_limited');
  });

  it('"Daily message quota exceeded" pauses delivery and lifts itself after the probe interval', () => {
    expect(classifySesError({ name: 'TooManyRequestsException', message: 'Daily message quota exceeded.', status: 429 })).toMatchObject({
      kind: 'paused',
      resumeAfterMs: SES_DAILY_QUOTA_PAUSE_MS,
    });
    expect(classifySesError({ name: 'ThrottlingException', message: 'Daily message quota exceeded.', status: 400 }).kind).toBe('paused');
  });

  it('MessageRejected rejects the message', () => {
    expect(classifySesError({ name: 'MessageRejected', message: 'Address blacklisted.', status: 400 })).toMatchObject({ kind: 'rejected' });
  });

  it('MessageRejected for an unverified identity pauses delivery (account setup)', () => {
    expect(
      classifySesError({
        name: 'MessageRejected',
        message: 'Email address is not verified. The following identities failed the check in region US-EAST-1: support@example.com',
        status: 400,
      }).kind,
    ).toBe('paused');
  });

  it.each(['AccountSuspendedException', 'SendingPausedException', 'MailFromDomainNotVerifiedException', 'NotFoundException', 'LimitExceededException'])(
    '%s pauses delivery',
    (name) => {
      expect(classifySesError({ name, message: 'm', status: 400 })).toMatchObject({ kind: 'paused', providerCode: name });
    },
  );

  it.each(['UnrecognizedClientException', 'InvalidSignatureException', 'CredentialsProviderError'])('%s (credentials) pauses delivery', (name) => {
    expect(classifySesError({ name, message: 'm', status: name === 'CredentialsProviderError' ? undefined : 403 }).kind).toBe('paused');
  });

  it('BadRequestException rejects the message', () => {
    expect(classifySesError({ name: 'BadRequestException', message: 'Illegal address', status: 400 }).kind).toBe('rejected');
  });

  it('5xx fails with an unknown outcome', () => {
    expect(classifySesError({ name: 'InternalFailure', message: 'x', status: 500, fault: 'server' })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
    expect(classifySesError({ name: 'ServiceUnavailable', message: 'x', status: 503 })).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('timeouts and dropped connections fail with an unknown outcome; refused connections do not', () => {
    expect(classifySesError({ name: 'AbortError', message: 'aborted', status: undefined, aborted: true })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
    expect(classifySesError({ name: 'Error', message: 'socket hang up', status: undefined })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
    expect(classifySesError({ name: 'Error', message: 'connect ECONNREFUSED', status: undefined, neverSent: true })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
  });
});
