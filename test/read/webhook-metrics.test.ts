import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { createDatabaseMetrics } from '../../src/read/db-metrics.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('webhook_metrics');
});
afterAll(() => db.close());

describe('webhook gauges', () => {
  it('report pending, given-up and the oldest pending age by endpoint name, read from the database', async () => {
    const metrics = createDatabaseMetrics({
      db: db.pool,
      schema: db.schema,
      promises: { expiryPromiseS: 60, emailPromiseS: 900 },
      retention: { retentionDays: null, erasePiiAfterDays: null },
      snapshotTtlMs: 0,
    });
    expect(await metrics.metrics()).not.toMatch(/leasehold_app_webhooks_pending\{/);
    await db.pool.query(
      `INSERT INTO ${ident(db.schema)}.webhook_events (id, endpoint, type, payload, occurred_at, created_at, state, finished_at)
       VALUES ('msg_a', 'slots', 'hold.expired', '{}', now(), now() - interval '90 seconds', 'pending', NULL),
              ('msg_b', 'slots', 'hold.expired', '{}', now(), now() - interval '10 seconds', 'pending', NULL),
              ('msg_c', 'crm', 'email.accepted', '{}', now(), now(), 'dead', now()),
              ('msg_d', 'crm', 'email.accepted', '{}', now(), now(), 'delivered', now())`,
    );
    const text = await metrics.metrics();
    expect(text).toMatch(/leasehold_app_webhooks_pending\{endpoint="slots"\} 2/);
    expect(text).toMatch(/leasehold_app_webhooks_pending\{endpoint="crm"\} 0/);
    expect(text).toMatch(/leasehold_app_webhooks_dead\{endpoint="crm"\} 1/);
    const age = Number(/leasehold_app_webhook_oldest_pending_age_seconds\{endpoint="slots"\} ([\d.]+)/.exec(text)![1]);
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(200);
  });
});
