/**
 * `npm run bench -- lease-cost` (opt-in): what one lease statement costs
 * with 1,000,000 pending intents, all of one tenant and spread over 10,000
 * tenants (the fair lease, tables/outbox/lane.ts fairNextSql, walks one
 * index descent a tenant and takes each tenant's share). Each sample leases
 * 50 intents and gives them back, so every sample sees the same backlog.
 * The lease before the fair lease is measured by running this file on that
 * tree (it calls only intentsLease, whose signature did not change).
 */
import { randomUUID } from 'node:crypto';
import { ident } from '../src/db/pool.js';
import { intentsLease } from '../src/tables/outbox.js';
import type { Benchmark, BenchResult } from './common.js';
import { median, percentile, round } from './common.js';

const PENDING = Number(process.env.BENCH_LEASE_COST_PENDING ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_LEASE_COST_SAMPLES ?? 200);
const LIMIT = 50;

export const leaseCost: Benchmark = {
  name: 'lease-cost',
  description: `one lease of ${LIMIT} at ${PENDING.toLocaleString('en')} pending intents: 1 tenant vs 10,000`,
  optIn: true,
  async run(db): Promise<BenchResult> {
    const figures: BenchResult['figures'] = [];
    const details: Record<string, unknown> = {};
    for (const tenants of [1, 10_000]) {
      const target = await db.freshSchema(`lease_cost_${tenants}`, 2);
      try {
        const s = ident(target.schema);
        const tenantOf = tenants === 1 ? `''` : `'tenant-' || (i % ${tenants})`;
        // A column the tree may not have yet (the lease before tenants): seeded only where it exists.
        const { rows: cols } = await target.pool.query(
          `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'email_outbox' AND column_name = 'tenant'`,
          [target.schema],
        );
        const tenantCol = cols.length > 0 ? ', tenant' : '';
        await target.pool.query(
          `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash)
           SELECT 'h-' || i, 'c@example.com', now() - interval '1 hour', 'expired', now() - interval '1 hour', 'x' FROM generate_series(1, $1) i`,
          [PENDING],
        );
        await target.pool.query(
          `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at${tenantCol})
           SELECT 'reservation-expired:h-' || i, 'h-' || i, 'c@example.com', 'reservation-expired', 'pending',
                  now() - make_interval(secs => i % 3600), now() - interval '1 hour'${tenantCol ? `, ${tenantOf}` : ''}
             FROM generate_series(1, $1) i`,
          [PENDING],
        );
        await target.pool.query(`VACUUM ANALYZE ${s}.email_outbox`);
        const ms: number[] = [];
        for (let i = 0; i < SAMPLES + 10; i++) {
          const started = process.hrtime.bigint();
          const leased = await intentsLease(target.pool, target.schema, { limit: LIMIT, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null });
          const took = Number(process.hrtime.bigint() - started) / 1e6;
          if (leased.length !== LIMIT) throw new Error(`leased ${leased.length}, expected ${LIMIT}`);
          // Given back, so the next sample sees the same backlog.
          await target.pool.query(`UPDATE ${s}.email_outbox SET lease_token = NULL, lease_expires_at = NULL WHERE id = ANY ($1)`, [
            leased.map((l) => l.id),
          ]);
          if (i >= 10) ms.push(took);
        }
        const label = tenants === 1 ? 'one tenant' : `${tenants.toLocaleString('en')} tenants`;
        figures.push({ name: `lease of ${LIMIT}, ${label}, median`, value: round(median(ms), 2), unit: 'ms' });
        figures.push({ name: `lease of ${LIMIT}, ${label}, p95`, value: round(percentile(ms, 95), 2), unit: 'ms' });
        details[label] = { samples: ms.length, medianMs: median(ms), p95Ms: percentile(ms, 95), tenantColumn: tenantCol !== '' };
      } finally {
        await target.drop();
      }
    }
    return { figures, details: { pending: PENDING, ...details } };
  },
};
