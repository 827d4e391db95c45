import { describe, expect, it } from 'vitest';
import { FailureLimiter, RefusalSampler } from '../../src/server/auth-limits.js';

describe('refused-token counters (time moved, never waited for)', () => {
  it('locks an address out at the Nth failure in a minute, for the lockout, then lets it try again', () => {
    let now = 1_000_000;
    const limiter = new FailureLimiter({ perMinute: 3, lockoutMs: 300_000, now: () => now });
    expect([limiter.fail('10.0.0.1'), limiter.fail('10.0.0.1')]).toEqual([false, false]);
    expect(limiter.lockedForSeconds('10.0.0.1')).toBe(0);
    expect(limiter.fail('10.0.0.1')).toBe(true);
    expect(limiter.lockedForSeconds('10.0.0.1')).toBe(300);
    expect(limiter.lockedForSeconds('10.0.0.2')).toBe(0);
    now += 299_500;
    expect(limiter.lockedForSeconds('10.0.0.1')).toBe(1);
    now += 500;
    expect(limiter.lockedForSeconds('10.0.0.1')).toBe(0);
    // Failures spread over more than a minute never add up to a lockout.
    for (let i = 0; i < 10; i++) {
      expect(limiter.fail('10.0.0.3')).toBe(false);
      if (i % 2 === 1) now += 61_000;
    }
  });

  it('stays bounded under a flood of addresses', () => {
    const limiter = new FailureLimiter({ perMinute: 2, lockoutMs: 1000, now: () => 0, maxClients: 100 });
    for (let i = 0; i < 10_000; i++) limiter.fail(`10.0.${i >> 8}.${i & 255}`);
    expect((limiter as unknown as { clients: Map<string, unknown> }).clients.size).toBeLessThanOrEqual(100);
  });

  it('admits a few refusals per token name a minute and reports how many it left out', () => {
    let now = 0;
    const sampler = new RefusalSampler({ perMinute: 2, now: () => now });
    const admitted = Array.from({ length: 6 }, () => sampler.admit('unknown'));
    expect(admitted).toEqual([{ suppressed: 0 }, { suppressed: 0 }, undefined, undefined, undefined, undefined]);
    expect(sampler.admit('oncall')).toEqual({ suppressed: 0 });
    now += 60_000;
    expect(sampler.admit('unknown')).toEqual({ suppressed: 4 });
    expect(sampler.admit('unknown')).toEqual({ suppressed: 0 });
  });
});
