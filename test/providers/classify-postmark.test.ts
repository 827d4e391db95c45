import { describe, expect, it } from 'vitest';
import { classifyPostmarkError, POSTMARK_ERROR_CODES, postmarkRateLimitBackoffMs } from '../../src/providers/classify-postmark.js';

describe('Postmark classification table', () => {
  it.each([300, 406])('ErrorCode %i rejects the message', (code) => {
    expect(classifyPostmarkError({ status: 422, errorCode: code, message: 'm' })).toMatchObject({
      kind: 'rejected',
      providerStatus: 422,
      providerCode: String(code),
    });
  });

  it.each([10, 400, 401, 405, 412, 413])('ErrorCode %i pauses delivery', (code) => {
    const status = code === 10 ? 401 : 422;
    expect(classifyPostmarkError({ status, errorCode: code, message: 'm' })).toMatchObject({ kind: 'paused', providerCode: String(code) });
  });

  it('ErrorCode 100 (maintenance) fails and is retried', () => {
    expect(classifyPostmarkError({ status: 503, errorCode: 100, message: 'Maintenance' })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
  });

  it.each([500, 503])('HTTP %i without an ErrorCode fails with an unknown outcome', (status) => {
    expect(classifyPostmarkError({ status, errorCode: undefined, message: undefined })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
      providerStatus: status,
    });
  });

  it('HTTP 429 is rate-limited with the adapter backoff', () => {
    expect(classifyPostmarkError({ status: 429, errorCode: 0, message: 'Rate limit exceeded', consecutiveRateLimits: 3 })).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 4000,
    });
  });

  it('ErrorCode 429 is rate-limited whatever the HTTP status', () => {
    expect(classifyPostmarkError({ status: 422, errorCode: 429, message: 'Rate Limit Exceeded' }).kind).toBe('rate_limited');
  });

  it('the 429 backoff doubles from one second and stops at a minute', () => {
    expect([1, 2, 3, 4, 7, 8, 50].map(postmarkRateLimitBackoffMs)).toEqual([1000, 2000, 4000, 8000, 60_000, 60_000, 60_000]);
  });

  it('HTTP 401 without an ErrorCode pauses delivery', () => {
    expect(classifyPostmarkError({ status: 401, errorCode: undefined, message: undefined }).kind).toBe('paused');
  });

  it('no response: refused connections are retried safely, timeouts are outcome-unknown', () => {
    expect(classifyPostmarkError({ status: null, errorCode: undefined, message: undefined, neverSent: true })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
    expect(classifyPostmarkError({ status: null, errorCode: undefined, message: undefined })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: true,
    });
  });

  it('other ErrorCodes are retried within the attempt budget', () => {
    expect(classifyPostmarkError({ status: 422, errorCode: 402, message: 'Invalid JSON' })).toMatchObject({
      kind: 'failed',
      outcomeUnknown: false,
    });
  });

  it('the table covers exactly the documented send codes', () => {
    expect(Object.keys(POSTMARK_ERROR_CODES).map(Number).sort((a, b) => a - b)).toEqual([10, 100, 300, 400, 401, 405, 406, 412, 413]);
  });
});
