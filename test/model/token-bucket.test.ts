import { describe, expect, it } from 'vitest';
import { take, waitMs, TokenBucket } from '../../src/model/token-bucket.js';

describe('token bucket', () => {
  const policy = { perSecond: 10, burst: 5 };

  it('starts full, grants whole permits only, and refills at the rate up to the burst', () => {
    const bucket = new TokenBucket(policy, 0);
    expect(bucket.take(8, 0)).toBe(5);
    expect(bucket.take(1, 0)).toBe(0);
    expect(bucket.take(1, 99)).toBe(0);
    expect(bucket.take(1, 100)).toBe(1);
    expect(bucket.take(100, 10_000)).toBe(5); // a long idle never exceeds the burst
  });

  it('in any window of t seconds grants at most burst + perSecond * t', () => {
    const bucket = new TokenBucket(policy, 0);
    const grants: number[] = [];
    for (let t = 0; t <= 3000; t += 7) for (let k = 0; k < bucket.take(3, t); k++) grants.push(t);
    for (let i = 0; i < grants.length; i++) {
      for (let j = i; j < grants.length; j++) {
        expect(j - i + 1).toBeLessThanOrEqual(policy.burst + (policy.perSecond * (grants[j]! - grants[i]!)) / 1000);
      }
    }
  });

  it('says how long until permits are available', () => {
    const empty = take({ tokens: 5, refilledAtMs: 0 }, policy, 5, 0).state;
    expect(waitMs(empty, policy, 1, 0)).toBe(100);
    expect(waitMs(empty, policy, 3, 50)).toBe(250);
    expect(waitMs(empty, policy, 1, 100)).toBe(0);
  });
});
