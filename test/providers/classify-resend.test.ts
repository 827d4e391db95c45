import { describe, expect, it } from 'vitest';
import { classifyResendError, RESEND_DEFAULT_RETRY_MS, type ResendErrorInput } from '../../src/providers/classify-resend.js';

const now = new Date('2026-03-10T18:00:00Z');
const input = (status: number | null, name: string, message = '', headers: Record<string, string> = {}): ResendErrorInput => ({
  status,
  name,
  message,
  headers,
});

describe('Resend classification table', () => {
  it('rate_limit_exceeded (429) is rate-limited for retry-after seconds', () => {
    expect(classifyResendError(input(429, 'rate_limit_exceeded', 'Too many requests', { 'retry-after': '2' }), now)).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 2000,
      providerStatus: 429,
      providerCode: 'rate_limit_exceeded',
    });
  });

  it('rate_limit_exceeded falls back to ratelimit-reset, then to a default', () => {
    expect(classifyResendError(input(429, 'rate_limit_exceeded', '', { 'ratelimit-reset': '3' }), now)).toMatchObject({ retryAfterMs: 3000 });
    expect(classifyResendError(input(429, 'rate_limit_exceeded'), now)).toMatchObject({ retryAfterMs: RESEND_DEFAULT_RETRY_MS });
  });

  it('an undocumented 429 is still rate-limited', () => {
    expect(classifyResendError(input(429, 'something_new', '', { 'Retry-After': '1' }), now)).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 1000,
    });
  });

  it('daily_quota_exceeded pauses until the next UTC midnight unless Resend says when', () => {
    expect(classifyResendError(input(429, 'daily_quota_exceeded'), now)).toMatchObject({
      kind: 'paused',
      resumeAfterMs: 6 * 3600_000,
    });
    expect(classifyResendError(input(429, 'daily_quota_exceeded', '', { 'retry-after': '600' }), now)).toMatchObject({
      kind: 'paused',
      resumeAfterMs: 600_000,
    });
  });

  it('monthly_quota_exceeded pauses without an automatic resume', () => {
    const result = classifyResendError(input(429, 'monthly_quota_exceeded'), now);
    expect(result.kind).toBe('paused');
    expect(result).not.toHaveProperty('resumeAfterMs');
  });

  it.each([
    [401, 'missing_api_key'],
    [401, 'restricted_api_key'],
    [403, 'invalid_api_key'],
    [401, 'validation_error'],
    [403, 'invalid_from_address'],
    [404, 'not_found'],
  ])('%i %s pauses delivery (key, sender or endpoint)', (status, name) => {
    expect(classifyResendError(input(status, name, 'x'), now)).toMatchObject({ kind: 'paused', providerCode: name });
  });

  it('403 validation_error about an unverified domain pauses delivery', () => {
    const result = classifyResendError(input(403, 'validation_error', 'The example.org domain is not verified. Please, add and verify your domain.'), now);
    expect(result).toMatchObject({ kind: 'paused', providerStatus: 403 });
  });

  it('validation_error about the from field pauses delivery', () => {
    expect(classifyResendError(input(422, 'validation_error', 'Invalid `from` field.'), now).kind).toBe('paused');
  });

  it('validation_error about the recipient rejects the message', () => {
    const result = classifyResendError(
      input(422, 'validation_error', 'Invalid `to` field. The email address needs to follow the `email@example.com` format.'),
      now,
    );
    expect(result).toMatchObject({ kind: 'rejected' });
    expect(result.kind === 'rejected' && result.reason).toMatch(/recipient/);
  });

  it.each(['invalid_attachment', 'missing_required_field', 'invalid_parameter', 'invalid_idempotency_key'])(
    '%s rejects the message',
    (name) => {
      expect(classifyResendError(input(422, name), now).kind).toBe('rejected');
    },
  );

  it('concurrent_idempotent_requests (409) is a short retry with an unknown outcome', () => {
    expect(classifyResendError(input(409, 'concurrent_idempotent_requests'), now)).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
  });

  it('invalid_idempotent_request (409) is reported as rejected, never resent under a new key', () => {
    const result = classifyResendError(input(409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload.'), now);
    expect(result).toMatchObject({ kind: 'rejected', providerStatus: 409, providerCode: 'invalid_idempotent_request' });
    expect(result.kind === 'rejected' && result.reason).toMatch(/not resent/);
  });

  it.each([
    [500, 'application_error'],
    [500, 'internal_server_error'],
    [502, 'application_error'],
  ])('%i %s fails with an unknown outcome', (status, name) => {
    expect(classifyResendError(input(status, name), now)).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('no response at all (network error or abort) fails with an unknown outcome', () => {
    expect(classifyResendError({ ...input(null, 'application_error'), aborted: true }, now)).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
      reason: expect.stringMatching(/timed out/),
    });
    expect(classifyResendError(input(null, 'application_error'), now)).toMatchObject({ kind: 'failed', outcomeUnknown: true });
  });

  it('an undocumented 4xx is retried within the attempt budget', () => {
    expect(classifyResendError(input(418, 'teapot'), now)).toMatchObject({ kind: 'failed', outcomeUnknown: false });
  });
});
