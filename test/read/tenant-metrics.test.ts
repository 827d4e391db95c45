import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { createDatabaseMetrics } from '../../src/read/db-metrics.js';
import { loadConfig } from '../../src/config.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/** Tenant gauges are off by default and bounded by top:N when asked for. */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tenant_metrics');
  const s = ident(db.schema);
  for (const [tenant, n] of [['a', 5], ['b', 3], ['c', 1]] as const) {
    await db.pool.query(
      `WITH r AS (INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
                  SELECT $1 || '-' || i, 'c@example.com', now(), 'expired', now(), 'x', $1 FROM generate_series(1, $2) i RETURNING id, expires_at)
       INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
       SELECT 'reservation-expired:' || r.id, r.id, 'c@example.com', 'reservation-expired', 'pending', r.expires_at, r.expires_at, $1 FROM r`,
      [tenant, n],
    );
  }
});
afterAll(() => db.close());

const metrics = (tenantMetricsTop?: number) =>
  createDatabaseMetrics({
    db: db.pool,
    schema: db.schema,
    promises: { expiryPromiseS: 10, emailPromiseS: 900 },
    retention: { retentionDays: 30, erasePiiAfterDays: 7 },
    ...(tenantMetricsTop ? { tenantMetricsTop } : {}),
  }).metrics();

describe('tenant gauges', () => {
  it('are not exported by default: no label per tenant', async () => {
    expect(await metrics()).not.toContain('leasehold_tenant_');
  });

  it('top:2 exports the two largest backlogs, labelled', async () => {
    const text = await metrics(2);
    expect(text).toContain('leasehold_tenant_backlog{tenant="a"} 5');
    expect(text).toContain('leasehold_tenant_backlog{tenant="b"} 3');
    expect(text).not.toContain('tenant="c"');
    expect(text).toMatch(/leasehold_tenant_oldest_pending_age_seconds\{tenant="a"\} \d/);
  });

  it('LEASEHOLD_TENANT_METRICS is off or top:N, with a clear error otherwise', () => {
    expect(loadConfig({ LEASEHOLD_TENANT_METRICS: 'top:20' }).tenantMetricsTop).toBe(20);
    expect(loadConfig({}).tenantMetricsTop).toBeUndefined();
    expect(() => loadConfig({ LEASEHOLD_TENANT_METRICS: 'all' })).toThrow(/LEASEHOLD_TENANT_METRICS.*off or top:N/);
  });
});
