import { ident } from '../src/db/pool.js';
import { DeliveryWorker } from '../src/delivery/worker.js';
import { silentLogger } from '../src/observability/logger.js';
import type { EmailGateway } from '../src/providers/gateway.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import type { Benchmark, BenchResult } from './common.js';
import { round, sleep } from './common.js';

/**
 * `npm run bench -- tenant-latency` (opt-in): the Tenants scenario in real
 * time, which the test suite counts in sends instead (test/delivery/
 * tenant-delivery.test.ts). One account at 20 emails/s, burst 20; tenant A
 * has 2,000 emails due at once, tenant B 20 due 1 s later; one
 * DeliveryWorker (start(), 100 ms poll) and a provider that accepts at once.
 *
 * Reports B's worst lateness (sent_at - its hold's expires_at; target
 * <= 3 s, where first-in-first-out would make B wait for A's whole backlog,
 * about 100 s) and A's send rate in the 1.5 s after B's last send (A alone
 * again: the account's whole rate).
 */
const A_EMAILS = 2000;
const B_EMAILS = 20;
const PER_SECOND = 20;

const accepting: EmailGateway = {
  name: 'accepting',
  idempotent: true,
  send: async (message) => ({ kind: 'accepted', receipt: `r-${message.intentId}` }),
};

export const tenantLatency: Benchmark = {
  name: 'tenant-latency',
  description: `tenant B's lateness beside tenant A's ${A_EMAILS}-email backlog at ${PER_SECOND} emails/s`,
  optIn: true,
  async run(db): Promise<BenchResult> {
    const schema = await db.freshSchema('tenant_latency');
    const s = ident(schema.schema);
    try {
      await rateLimiterSet(schema.pool, schema.schema, { perSecond: PER_SECOND, burst: PER_SECOND });
      const seed = (tenant: string, count: number, dueInS: number) =>
        schema.pool.query(
          `WITH h AS (
             INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
             SELECT $1 || '-' || i, 'c@example.com', clock_timestamp() + make_interval(secs => $2), 'expired',
                    clock_timestamp() + make_interval(secs => $2), 'x', $1
               FROM generate_series(1, $3) i RETURNING id, expires_at)
           INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
           SELECT 'reservation-expired:' || h.id, h.id, 'c@example.com', 'reservation-expired', 'pending', h.expires_at, h.expires_at, $1 FROM h`,
          [tenant, dueInS, count],
        );
      await seed('a', A_EMAILS, 0);
      await seed('b', B_EMAILS, 1);
      const worker = new DeliveryWorker({
        pool: schema.pool,
        schema: schema.schema,
        gateway: accepting,
        pollIntervalMs: 100,
        from: 'Bench <bench@example.com>',
        logger: silentLogger,
      });
      worker.start();
      try {
        const deadline = Date.now() + 60_000;
        for (;;) {
          const { rows } = await schema.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE tenant = 'b' AND state = 'sent'`,
          );
          if (rows[0]!.n === B_EMAILS) break;
          if (Date.now() > deadline) throw new Error(`tenant B had ${rows[0]!.n} of ${B_EMAILS} emails sent after 60 s`);
          await sleep(100);
        }
        await sleep(2000); // A alone again
      } finally {
        await worker.stop();
      }
      const { rows } = await schema.pool.query<{ worst: number; median: number; a_after: number }>(
        `WITH b AS (SELECT extract(epoch FROM o.sent_at - r.expires_at) AS late, o.sent_at
                      FROM ${s}.email_outbox o JOIN ${s}.support_reservations r ON r.id = o.reservation_id WHERE o.tenant = 'b')
         SELECT max(late)::float8 AS worst,
                (percentile_cont(0.5) WITHIN GROUP (ORDER BY late))::float8 AS median,
                (SELECT count(*)::int FROM ${s}.email_attempts a JOIN ${s}.email_outbox o ON o.id = a.intent_id
                  WHERE o.tenant = 'a' AND a.outcome = 'accepted'
                    AND a.started_at > (SELECT max(sent_at) FROM b)
                    AND a.started_at <= (SELECT max(sent_at) FROM b) + interval '1.5 seconds') AS a_after
           FROM b`,
      );
      const r = rows[0]!;
      return {
        figures: [
          { name: "tenant B's worst lateness", value: round(r.worst, 2), unit: 's', target: '<= 3' },
          { name: "tenant B's median lateness", value: round(r.median, 2), unit: 's' },
          { name: "tenant A's rate after B's last send", value: round(r.a_after / 1.5, 1), unit: 'emails/s', target: `>= ${PER_SECOND * 0.9}` },
        ],
        details: { aEmails: A_EMAILS, bEmails: B_EMAILS, perSecond: PER_SECOND, aSendsIn1500msAfterB: r.a_after },
      };
    } finally {
      await schema.drop();
    }
  },
};
