import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, ident } from '../../src/db/pool.js';
import { createLogger } from '../../src/observability/logger.js';
import { Operations } from '../../src/ops/operations.js';
import { applyConfiguredRates, type ConfiguredRate } from '../../src/ops/rate-configuration.js';
import { auditList } from '../../src/tables/audit-log.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { LogCapture } from '../helpers/server.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('rate_configuration');
});
afterAll(() => db.close());

const FROM = 'LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST';
const configured = (account: string, perSecond: number, burst: number): ConfiguredRate => ({ account, policy: { perSecond, burst }, from: FROM });

/** A process's start: apply its configuration, with its log lines kept. */
async function start(rate: ConfiguredRate) {
  const logs = new LogCapture();
  const results = await applyConfiguredRates(db.pool, db.schema, [rate], createLogger({ level: 'debug', destination: logs }));
  const events = logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { outcome: results.get(rate.account)!.outcome, events };
}

const operator = (account: string) =>
  new Operations({
    pool: db.pool,
    schema: db.schema,
    initialRate: { perSecond: 10, burst: 10 },
    accounts: { accounts: [{ name: account, provider: 'sandbox', rate: { perSecond: 10, burst: 10, unit: 'requests' }, settings: {} }], failover: [account] },
  }).as({ name: 'cli:alice' });

const rateAudits = async (account: string) =>
  (await auditList(db.pool, db.schema, { limit: 100, action: 'rate_limit.set' })).entries.filter((e) => e.target === account);

describe('the configured rate limit at a start', () => {
  it('a fresh database starts with the configuration, recorded as applied (nothing to audit)', async () => {
    expect((await start(configured('fresh', 10, 10))).outcome).toBe('created');
    const state = (await rateLimiterGet(db.pool, db.schema, null, 'fresh'))!;
    expect(state).toMatchObject({ perSecond: 10, burst: 10, source: 'configuration', setBy: FROM, configured: { perSecond: 10, burst: 10 } });
    expect(await rateAudits('fresh')).toEqual([]);
  });

  it("a changed configuration takes effect at the next start (the sandbox's 10/s, then a provider's 1.9/s burst 1), audited as the configuration", async () => {
    await start(configured('upgrade', 10, 10));
    const { outcome, events } = await start(configured('upgrade', 1.9, 1));
    expect(outcome).toBe('applied');
    const state = (await rateLimiterGet(db.pool, db.schema, null, 'upgrade'))!;
    expect(state).toMatchObject({ perSecond: 1.9, burst: 1, source: 'configuration', configured: { perSecond: 1.9, burst: 1 } });
    // A change never grants more than the new burst.
    expect(state.tokens).toBeLessThanOrEqual(1);
    const [entry] = await rateAudits('upgrade');
    expect(entry).toMatchObject({ actor: 'configuration', before: { perSecond: 10, burst: 10 }, after: { perSecond: 1.9, burst: 1 }, detail: { from: FROM } });
    expect(events.find((e) => e['event'] === 'rate_limit.configured')).toMatchObject({ account: 'upgrade', after: { perSecond: 1.9, burst: 1 } });
  });

  it("an operator's change survives a restart with the same configuration, and the start warns with both values", async () => {
    await start(configured('kept', 10, 10));
    await operator('kept').setRateLimit({ perSecond: 5, burst: 3 }, 'kept');
    const { outcome, events } = await start(configured('kept', 10, 10));
    expect(outcome).toBe('unchanged');
    expect((await rateLimiterGet(db.pool, db.schema, null, 'kept'))!).toMatchObject({
      perSecond: 5,
      burst: 3,
      source: 'operator',
      setBy: 'cli:alice',
      configured: { perSecond: 10, burst: 10 },
    });
    const warning = events.find((e) => e['event'] === 'rate_limit.configuration_overridden');
    expect(warning).toMatchObject({
      level: 40,
      account: 'kept',
      configured: { perSecond: 10, burst: 10 },
      inForce: { perSecond: 5, burst: 3, source: 'operator', setBy: 'cli:alice' },
    });
    expect(warning!['msg']).toContain('10/s, burst 10');
    expect(warning!['msg']).toContain('5/s, burst 3');
    // Only the operator's change is audited.
    expect((await rateAudits('kept')).map((e) => e.actor)).toEqual(['cli:alice']);
  });

  it("a configuration changed after an operator's change wins, and is audited as replacing it", async () => {
    await start(configured('replaced', 10, 10));
    await operator('replaced').setRateLimit({ perSecond: 5, burst: 3 }, 'replaced');
    const { outcome, events } = await start(configured('replaced', 2, 2));
    expect(outcome).toBe('applied');
    expect((await rateLimiterGet(db.pool, db.schema, null, 'replaced'))!).toMatchObject({ perSecond: 2, burst: 2, source: 'configuration', setBy: FROM });
    const [latest] = await rateAudits('replaced');
    expect(latest).toMatchObject({ actor: 'configuration', before: { perSecond: 5, burst: 3 }, after: { perSecond: 2, burst: 2 }, detail: { replaced: 'operator' } });
    expect(events.some((e) => e['event'] === 'rate_limit.configuration_overridden')).toBe(false);
    // The operator's next change is in force again until the configuration changes.
    await operator('replaced').setRateLimit({ perSecond: 4 }, 'replaced');
    expect((await start(configured('replaced', 2, 2))).outcome).toBe('unchanged');
    expect((await rateLimiterGet(db.pool, db.schema, null, 'replaced'))!).toMatchObject({ perSecond: 4, burst: 2, source: 'operator' });
  });

  it("a row with no configuration known (an operator's, from before migration 0028) keeps its limit: the start's configuration is recorded", async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 100 }, null, 'legacy', 'cli:bob');
    const { outcome, events } = await start(configured('legacy', 10, 10));
    expect(outcome).toBe('recorded');
    expect((await rateLimiterGet(db.pool, db.schema, null, 'legacy'))!).toMatchObject({ perSecond: 1000, burst: 100, source: 'operator', configured: { perSecond: 10, burst: 10 } });
    expect(events.some((e) => e['event'] === 'rate_limit.configuration_overridden')).toBe(true);
    // From then on the rule is the usual one: a changed configuration applies.
    expect((await start(configured('legacy', 20, 10))).outcome).toBe('applied');
  });

  it('processes starting together with a new configuration apply it once, audited once', async () => {
    await start(configured('together', 10, 10));
    const pools = Array.from({ length: 6 }, () => createPool({ connectionString: db.url, max: 2 }));
    try {
      const outcomes = await Promise.all(
        pools.map((pool) =>
          applyConfiguredRates(pool, db.schema, [configured('together', 3, 2)], createLogger({ level: 'silent' })).then((r) => r.get('together')!.outcome),
        ),
      );
      expect(outcomes.filter((o) => o === 'applied')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'unchanged')).toHaveLength(5);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    expect((await rateAudits('together')).filter((e) => e.actor === 'configuration')).toHaveLength(1);
    expect((await rateLimiterGet(db.pool, db.schema, null, 'together'))!).toMatchObject({ perSecond: 3, burst: 2 });
  });

  it('processes starting together on a fresh database create the row once', async () => {
    const pools = Array.from({ length: 4 }, () => createPool({ connectionString: db.url, max: 2 }));
    try {
      const outcomes = await Promise.all(
        pools.map((pool) => applyConfiguredRates(pool, db.schema, [configured('new', 7, 7)], createLogger({ level: 'silent' })).then((r) => r.get('new')!.outcome)),
      );
      expect(outcomes.sort()).toEqual(['created', 'unchanged', 'unchanged', 'unchanged']);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.rate_limiter WHERE name = 'new'`);
    expect(rows[0].n).toBe(1);
  });
});
