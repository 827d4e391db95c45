import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perSecondArg } from '../../src/cli/commands/args.js';
import { loadConfig } from '../../src/config.js';
import { ident } from '../../src/db/pool.js';
import { rateLimiterResume } from '../../src/tables/rate-limiter.js';
import { deliveryControlGet, deliveryPause, deliveryResume } from '../../src/tables/delivery-control.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { MIN_PER_SECOND, validatePerSecond } from '../../src/model/delivery-policy.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ConfigError, ValidationError } from '../../src/errors.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import { rateLimiterTake } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { LogCapture } from '../helpers/server.js';

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
  await rateLimiterResume(db.pool, db.schema, null);
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
    const grant = await rateLimiterTake(db.pool, db.schema, 5);
    expect(grant).toMatchObject({ granted: 0, paused: false, perSecond: MIN_PER_SECOND });
    expect(Number.isFinite(grant.retryInMs)).toBe(true);
    // A second later at 0.001/s it has still refilled only ~0.001 of a permit.
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET refilled_at = refilled_at - interval '1 second'`);
    expect((await rateLimiterTake(db.pool, db.schema, 5)).granted).toBe(0);
  });

  it('can be repaired through rateLimiterSet', async () => {
    await expect(rateLimiterSet(db.pool, db.schema, { perSecond: 20, burst: 4 })).resolves.toMatchObject({ perSecond: 20, burst: 4 });
  });
});

describe('pause precedence: an operator outranks providers', () => {
  beforeEach(async () => {
  await deliveryResume(db.pool, db.schema);
  await rateLimiterResume(db.pool, db.schema, null);
});

  const operator = (reason: string, untilMs?: number) =>
    deliveryPause(db.pool, db.schema, { reason, by: 'operator', ...(untilMs !== undefined ? { untilMs } : {}) });
  const provider = (reason: string, untilMs?: number) =>
    deliveryPause(db.pool, db.schema, { reason, by: 'ses', ...(untilMs !== undefined ? { untilMs } : {}) });
  const dbNow = async () => (await db.pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now.getTime();

  it("a provider's pause with an end time neither relabels nor shortens an operator's indefinite pause", async () => {
    const mine = await operator('maintenance window');
    const after = await provider('SES: daily sending quota exhausted', 2500);
    expect(after).toMatchObject({ paused: true, reason: 'maintenance window', pausedBy: 'operator', pausedUntil: null });
    expect(after.pausedAt).toEqual(mine.pausedAt);
    expect(await deliveryControlGet(db.pool, db.schema)).toEqual(after);
    // Still paused for every worker: the permit query sees the same state.
    expect(await rateLimiterTake(db.pool, db.schema, 1)).toMatchObject({ granted: 0, paused: true, pauseReason: 'maintenance window' });
  });

  it("an operator's timed pause is neither extended nor relabelled by a provider's", async () => {
    const mine = await operator('drill', 60_000);
    expect(await provider('account suspended')).toEqual(mine);
    expect(await provider('quota', 3_600_000)).toEqual(mine);
  });

  it('a provider pause on top of a provider pause keeps the later end, with its reason', async () => {
    const first = await provider('quota exhausted', 600_000);
    const longer = await provider('quota still exhausted', 3_600_000);
    expect(longer).toMatchObject({ pausedBy: 'ses', reason: 'quota still exhausted', pausedAt: first.pausedAt });
    expect(longer.pausedUntil!.getTime()).toBeGreaterThan(first.pausedUntil!.getTime());
    // A shorter one does not bring the end forward.
    expect(await provider('throttled briefly', 60_000)).toEqual(longer);
    // An indefinite one outlasts any end time; a timed one does not shorten it.
    const indefinite = await provider('account suspended');
    expect(indefinite).toMatchObject({ reason: 'account suspended', pausedUntil: null, pausedAt: first.pausedAt });
    expect(await provider('quota', 600_000)).toEqual(indefinite);
  });

  it("an operator's pause replaces a provider's: the operator's reason, no end time unless given", async () => {
    const theirs = await provider('quota exhausted', 600_000);
    const mine = await operator('investigating bounces');
    expect(mine).toMatchObject({ paused: true, reason: 'investigating bounces', pausedBy: 'operator', pausedUntil: null, pausedAt: theirs.pausedAt });
    const timed = await operator('back in a minute', 60_000);
    expect(timed).toMatchObject({ reason: 'back in a minute', pausedBy: 'operator' });
    expect(timed.pausedUntil!.getTime() - (await dbNow())).toBeLessThanOrEqual(60_000);
  });

  it('a pause that has lifted itself no longer outranks anything', async () => {
    await operator('short drill', 60_000);
    await db.pool.query(`UPDATE ${ident(db.schema)}.delivery_control SET paused_until = now() - interval '1 second'`);
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: false });
    const theirs = await provider('quota exhausted', 600_000);
    expect(theirs).toMatchObject({ paused: true, pausedBy: 'ses', reason: 'quota exhausted' });
    expect(theirs.pausedUntil!.getTime()).toBeGreaterThan(await dbNow());
  });

  it("a send in flight when the operator paused, answered with a provider's timed pause, leaves the operator's pause in place", async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'inflight' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const gateway = new ScriptedGateway(async () => {
      await operator('stop everything');
      return { kind: 'paused', reason: 'SES: daily sending quota exhausted', resumeAfterMs: 2500 };
    });
    const logs = new LogCapture();
    const logger = createLogger({ level: 'info', destination: logs });
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, logger }).runOnce();
    expect(run.outcomes).toEqual({ paused: 1 });
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({
      paused: true,
      reason: 'stop everything',
      pausedBy: 'operator',
      pausedUntil: null,
    });
    // The provider's pause lands on its account; the operator's fleet-wide one outranks it.
    expect((await rateLimiterGet(db.pool, db.schema))!.pause).toMatchObject({ paused: true, pausedBy: 'scripted' });
    expect(await rateLimiterTake(db.pool, db.schema, 1)).toMatchObject({ granted: 0, paused: true, accountPaused: true, pauseReason: 'stop everything' });
    expect(logs.events().find((e) => e.event === 'account.paused')).toMatchObject({ account: 'default', by: 'scripted' });
  });

  it("resume by an operator lifts everything, whoever paused", async () => {
    await operator('maintenance');
    await provider('quota', 600_000);
    expect(await deliveryResume(db.pool, db.schema)).toMatchObject({ paused: false, reason: null, pausedBy: null, pausedUntil: null });
    expect((await rateLimiterTake(db.pool, db.schema, 1)).paused).toBe(false);
  });
});
