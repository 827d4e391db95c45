import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perSecondArg } from '../../src/cli/commands/args.js';
import { loadConfig } from '../../src/config.js';
import { ident } from '../../src/db/pool.js';
import {
  MIN_PER_SECOND,
  deliveryControlGet,
  deliveryPause,
  deliveryResume,
  rateLimiterGet,
  rateLimiterSet,
  validatePerSecond,
} from '../../src/delivery/control.js';
import { ConfigError, ValidationError } from '../../src/errors.js';
import { limiterTake } from '../../src/ratelimit/limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('control');
});
afterAll(() => db.close());

describe('rate-limit policy minimum', () => {
  it.each([5e-324, 1e-300, 0.0009, 0, -1])('validatePerSecond refuses %s', (perSecond) => {
    expect(() => validatePerSecond(perSecond)).toThrow(ValidationError);
  });

  it('accepts the minimum, 0.001 per second', () => {
    expect(MIN_PER_SECOND).toBe(0.001);
    expect(validatePerSecond(0.001)).toBe(0.001);
  });

  it('the library, the CLI and the configuration all use that rule', async () => {
    await expect(rateLimiterSet(db.pool, db.schema, { perSecond: 5e-324, burst: 1 })).rejects.toThrow(ValidationError);
    expect(() => perSecondArg('5e-324')).toThrow(/0\.001/);
    expect(perSecondArg('0.001')).toBe(0.001);
    const config = (() => {
      try {
        return loadConfig({ LEASEHOLD_RATE_PER_SECOND: '5e-324' });
      } catch (error) {
        return error;
      }
    })();
    expect(config).toBeInstanceOf(ConfigError);
    expect((config as ConfigError).variable).toBe('LEASEHOLD_RATE_PER_SECOND');
    expect((config as ConfigError).message).toContain('0.001');
    expect(loadConfig({ LEASEHOLD_RATE_PER_SECOND: '0.001' }).ratePerSecond).toBe(0.001);
  });
});

describe('a limiter row holding a rate below the minimum', () => {
  beforeEach(async () => {
    await deliveryResume(db.pool, db.schema);
    await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 5 });
    // Written behind the validator's back (an older version, or by hand): a
    // product of it and a sub-second elapsed time underflows float8.
    await db.pool.query(
      `UPDATE ${ident(db.schema)}.rate_limiter SET per_second = '5e-324'::float8, tokens = 0, refilled_at = now()`,
    );
  });

  it('still reads, reporting the rate it is held to', async () => {
    const state = await rateLimiterGet(db.pool, db.schema);
    expect(state).toMatchObject({ perSecond: MIN_PER_SECOND, burst: 5 });
    expect(state!.tokens).toBeGreaterThanOrEqual(0);
    expect(state!.tokens).toBeLessThan(1);
  });

  it('still grants permits (none yet) with a finite wait', async () => {
    const grant = await limiterTake(db.pool, db.schema, 5);
    expect(grant).toMatchObject({ granted: 0, paused: false, perSecond: MIN_PER_SECOND });
    expect(Number.isFinite(grant.retryInMs)).toBe(true);
    // A second later at 0.001/s it has still refilled only ~0.001 of a permit.
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET refilled_at = refilled_at - interval '1 second'`);
    expect((await limiterTake(db.pool, db.schema, 5)).granted).toBe(0);
  });

  it('can be repaired through rateLimiterSet', async () => {
    await expect(rateLimiterSet(db.pool, db.schema, { perSecond: 20, burst: 4 })).resolves.toMatchObject({ perSecond: 20, burst: 4 });
  });
});
