import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { migrateBefore as migrateUpTo } from '../helpers/migrations.js';
import { silentLogger } from '../../src/observability/logger.js';
import { applyConfiguredRates } from '../../src/ops/rate-configuration.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';

/**
 * Upgrading to migration 0028 (where the limit in force came from): a row
 * an operator set, as the audit log tells, stays the operator's through
 * the first start after the upgrade; every other row counts as holding
 * the configuration it was written with, so a changed configuration
 * applies at that start.
 */
let pool: pg.Pool;
const schema = `rate_source_upgrade_${randomBytes(4).toString('hex')}`;
const s = ident(schema);

const migrateBefore = (upTo: number) => migrateUpTo(pool, schema, upTo);

const audit = (target: string, after: { perSecond: number; burst: number }, actor: string) =>
  pool.query(`INSERT INTO ${s}.audit_log (actor, action, target, before, after) VALUES ($1, 'rate_limit.set', $2, '{}', $3::jsonb)`, [
    actor,
    target,
    JSON.stringify(after),
  ]);

beforeAll(async () => {
  pool = createPool({ connectionString: inject('databaseUrl'), max: 4, queryTimeoutMs: 0 });
  await migrateBefore(28);
  await pool.query(
    `INSERT INTO ${s}.rate_limiter (name, per_second, burst, tokens) VALUES ('default', 10, 10, 10), ('ops', 5, 3, 3), ('stale', 7, 7, 7)`,
  );
  await audit('ops', { perSecond: 4, burst: 3 }, 'cli:carol');
  await audit('ops', { perSecond: 5, burst: 3 }, 'dashboard-token');
  // An operator's change that a later write (an older version's start) replaced.
  await audit('stale', { perSecond: 2, burst: 2 }, 'cli:dave');
  await migrate(pool, schema);
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

describe('migration 0028 on rows already there', () => {
  it("a row whose limit the latest audited change set is the operator's; the others hold their configuration", async () => {
    expect(await rateLimiterGet(pool, schema, null, 'ops')).toMatchObject({ perSecond: 5, source: 'operator', setBy: 'dashboard-token', configured: null });
    expect(await rateLimiterGet(pool, schema, null, 'default')).toMatchObject({ source: 'configuration', configured: { perSecond: 10, burst: 10 } });
    expect(await rateLimiterGet(pool, schema, null, 'stale')).toMatchObject({ source: 'configuration', configured: { perSecond: 7, burst: 7 } });
  });

  it("the first start after the upgrade: a changed configuration applies, an operator's limit stays", async () => {
    const results = await applyConfiguredRates(
      pool,
      schema,
      [
        { account: 'default', policy: { perSecond: 1.9, burst: 1 }, from: 'LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST' },
        { account: 'ops', policy: { perSecond: 10, burst: 10 }, from: 'LEASEHOLD_ACCOUNTS_FILE' },
      ],
      silentLogger,
    );
    expect(results.get('default')!.outcome).toBe('applied');
    expect(results.get('ops')!.outcome).toBe('recorded');
    expect(await rateLimiterGet(pool, schema, null, 'default')).toMatchObject({ perSecond: 1.9, burst: 1, source: 'configuration' });
    expect(await rateLimiterGet(pool, schema, null, 'ops')).toMatchObject({ perSecond: 5, burst: 3, source: 'operator', configured: { perSecond: 10, burst: 10 } });
  });
});
