import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_RULE, givenUp, parseRetryAfter, retryDelayMs } from '../../src/webhooks/retry.js';

const now = new Date('2026-12-03T12:00:00.000Z');

describe('Retry-After', () => {
  it('reads seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('reads an HTTP date as the wait until then, a past one as 0', () => {
    expect(parseRetryAfter('Thu, 03 Dec 2026 12:01:30 GMT', now)).toBe(90_000);
    expect(parseRetryAfter('Thu, 03 Dec 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('ignores what is neither: absent, negative, fractional, garbage', () => {
    for (const value of [null, undefined, '', '-5', '1.5', 'soon', '12abc']) expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe('back-off', () => {
  const rule = { baseMs: 1000, capMs: 60_000, maxRetryAfterMs: 3_600_000 };

  it('grows threefold per attempt, jittered over the upper half of the step', () => {
    expect(retryDelayMs(1, undefined, 0, rule)).toBe(500);
    expect(retryDelayMs(1, undefined, 0.999999, rule)).toBe(1000);
    expect(retryDelayMs(2, undefined, 0, rule)).toBe(1500);
    expect(retryDelayMs(3, undefined, 0.5, rule)).toBe(6750);
  });

  it('stops growing at the cap', () => {
    expect(retryDelayMs(50, undefined, 0.999999, rule)).toBe(60_000);
    expect(retryDelayMs(50, undefined, 0, rule)).toBe(30_000);
  });

  it('spreads events that failed together', () => {
    const delays = new Set(Array.from({ length: 50 }, (_, i) => retryDelayMs(4, undefined, i / 50, rule)));
    expect(delays.size).toBe(50);
  });

  it('honours Retry-After: never sooner, at most 10% (and 30 s) later', () => {
    expect(retryDelayMs(1, 120_000, 0, rule)).toBe(120_000);
    expect(retryDelayMs(1, 120_000, 0.999999, rule)).toBe(132_000);
    expect(retryDelayMs(1, 1_000_000, 0.999999, rule)).toBe(1_030_000);
    // Beyond the exponential step of the attempt, too: the endpoint knows best.
    expect(retryDelayMs(1, 30_000, 0, rule)).toBeGreaterThan(retryDelayMs(1, undefined, 0.999999, rule));
    expect(retryDelayMs(1, 0, 0.5, rule)).toBe(0);
  });

  it('holds a Retry-After beyond the bound to it', () => {
    expect(retryDelayMs(1, 10 * 86_400_000, 0, rule)).toBe(3_600_000);
    expect(retryDelayMs(1, 10 * 86_400_000, 0, DEFAULT_RETRY_RULE)).toBe(86_400_000);
  });
});

describe('give-up', () => {
  const since = new Date('2026-12-01T12:00:00.000Z');
  it('gives up when the next try would come after the bound, not before', () => {
    const bound = 3 * 86_400_000;
    expect(givenUp(since, new Date(since.getTime() + bound), bound)).toBe(false);
    expect(givenUp(since, new Date(since.getTime() + bound + 1), bound)).toBe(true);
  });
});
