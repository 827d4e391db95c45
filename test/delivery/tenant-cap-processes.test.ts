import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { worstWindowExcess } from '../helpers/fleet.js';
import { fixture, startNode, type Child } from '../helpers/processes.js';

/**
 * A tenant's cap (tenant_policies perSecond and burst) holds across three
 * delivery processes, as an account's limit does: its sends in any window
 * of t seconds stay within burst + perSecond * t, while another tenant on
 * the same account sends at the account's rate.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tenant_cap_procs');
});
afterAll(() => db.close());

async function intents(tenant: string, count: number): Promise<void> {
  const s = ident(db.schema);
  await db.pool.query(
    `WITH h AS (
       INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
       SELECT $1 || '-' || i, 'c@example.com', now(), 'expired', now(), 'x', $1 FROM generate_series(1, $2) i RETURNING id, expires_at)
     INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
     SELECT 'reservation-expired:' || h.id, h.id, 'c@example.com', 'reservation-expired', 'pending', h.expires_at, h.expires_at, $1 FROM h`,
    [tenant, count],
  );
}

describe('a tenant cap across processes', () => {
  it('a tenant capped at 2/s never exceeds burst + 2t across 3 processes', async () => {
    const s = ident(db.schema);
    await rateLimiterSet(db.pool, db.schema, { perSecond: 200, burst: 20 });
    await db.pool.query(`INSERT INTO ${s}.tenant_policies (tenant, per_second, burst, tokens, refilled_at) VALUES ('capped', 2, 2, 2, now())`);
    await intents('capped', 12);
    await intents('other', 200);
    const children: Child[] = [0, 1, 2].map(() => startNode(fixture('delivery-child'), ['--loop', '--concurrency', '8', '--batch', '8'], db.env));
    try {
      await Promise.all(children.map((c) => c.waitForLine(/^READY/)));
      await expect
        .poll(async () => (await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE tenant = 'capped' AND state = 'sent'`)).rows[0].n, {
          timeout: 30_000,
          interval: 200,
        })
        .toBe(12);
    } finally {
      for (const child of children) child.process.kill('SIGTERM');
      await Promise.all(children.map((c) => c.exited));
    }
    const times = async (tenant: string) =>
      (
        await db.pool.query<{ t: number }>(
          `SELECT extract(epoch FROM a.started_at)::float8 AS t FROM ${s}.email_attempts a JOIN ${s}.email_outbox o ON o.id = a.intent_id
            WHERE o.tenant = $1 AND a.outcome = 'accepted' ORDER BY 1`,
          [tenant],
        )
      ).rows.map((r) => r.t);
    const capped = await times('capped');
    expect(capped).toHaveLength(12);
    expect(worstWindowExcess(capped, 2, 2)).toBeLessThanOrEqual(0);
    // The other tenant was not held to the cap: all 200 went out meanwhile, far faster than 2/s.
    const other = await times('other');
    expect(other).toHaveLength(200);
    expect(worstWindowExcess(other, 2, 2)).toBeGreaterThan(0);
  }, 60_000);
});
