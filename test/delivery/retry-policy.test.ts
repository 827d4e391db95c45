import { describe, expect, it } from 'vitest';
import { failureDelayMs, rateLimitDelayMs } from '../../src/delivery/retry-policy.js';

describe('retry policy', () => {
  it('failure backoff is full jitter over an exponentially growing, capped window', () => {
    const policy = { baseMs: 1000, capMs: 60_000 };
    expect([0, 1, 2, 3, 10].map((n) => failureDelayMs(n, policy, () => 0.999999))).toEqual([999, 1999, 3999, 7999, 59_999]);
    expect(failureDelayMs(5, policy, () => 0)).toBe(0);
  });

  it('rate-limit delays are never before retry-after and spread intents limited at the same moment', () => {
    const delays = Array.from({ length: 200 }, () => rateLimitDelayMs(10_000));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(10_000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(12_500);
    // The seed's `seed % (base/5)` gave every intent with equal attempts the same delay.
    expect(new Set(delays).size).toBeGreaterThan(150);
    expect(rateLimitDelayMs(0, () => 1)).toBe(250);
  });
});
