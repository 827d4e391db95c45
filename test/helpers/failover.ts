import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { FakeResend } from './fake-resend.js';
import { cliPath, startNode, type Child } from './processes.js';
import type { ReplicatedPostgres } from './replicated-postgres.js';

/**
 * One failover with leasehold running, as an operator runs it: an
 * `expiry-worker` and a `delivery-worker` process (bin/leasehold.js) on
 * `url`, the Resend adapter against a local stand-in that honours
 * idempotency keys, holds falling due before, during and after the
 * failover. The primary's postmaster is SIGKILLed mid-run and the standby
 * promoted `gapMs` later (the time a failover manager takes to decide).
 */
export interface FailoverPlan {
  cluster: ReplicatedPostgres;
  /** DATABASE_URL of the leasehold processes: a switched address or a multi-host URL. */
  url: string;
  /** Called once the standby is promoted (repoint the switched address). */
  onPromoted?: () => void;
  holds?: number;
  /** Holds fall due evenly over this long from the start (ms). */
  spreadMs?: number;
  /** The primary is killed this long after the holds start falling due (ms). */
  killAtMs?: number;
  gapMs?: number;
  /** Start one more delivery worker between the kill and the promotion: it must wait for its database, not exit. */
  startDuringFailover?: boolean;
  /** How long to wait for every email after the promotion (ms). */
  drainMs?: number;
}

export interface FailoverOutcome {
  /** Per hold on the promoted server: its status, how many intents, the intent's state, when it was (last) expired (ms). */
  holds: Array<{ id: string; status: string; intents: number; state: string | null; dueAt: number; expiredAt: number | null }>;
  /** Requests that carried each intent (a batch counts for each member): above 1, leasehold sent it again. */
  sendsPerIntent: Map<string, number>;
  /** When the stand-in first delivered each intent (ms). */
  deliveredAt: Map<string, number>;
  /** Intents the stand-in delivered, at least once, as a member of a batch request. */
  batched: Set<string>;
  /** Intents flagged possible_duplicate on the promoted server. */
  flagged: Set<string>;
  /** Deliveries the stand-in made per intent id (after its idempotency-key dedupe). */
  deliveriesPerIntent: Map<string, number>;
  /** Send requests that delivered nothing: an idempotency key replayed (a resend caught), or refused while in flight. */
  requestsDeliveringNothing: number;
  /** Each intent's first delivery, seconds after the later of its hold's due time and the promotion. */
  lateness: Map<string, number>;
  /** Leasehold processes that exited before the end, with what they printed. */
  exits: string[];
  /** The process started during the failover: when it said its lane runs, seconds after the promotion. */
  lateStarterRunningAfterS?: number;
  /** It logged db.waiting (it met the failover and waited). */
  lateStarterWaited?: boolean;
  killedAt: number;
  promotedAt: number;
  /** Emails the stand-in had delivered when the primary was killed, and holds not yet due then: the failover was mid-run. */
  deliveredBeforeKill: number;
  dueAfterKill: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runFailover(plan: FailoverPlan): Promise<FailoverOutcome> {
  const { cluster, url } = plan;
  const holds = plan.holds ?? 60;
  const spreadMs = plan.spreadMs ?? 6000;
  const killAtMs = plan.killAtMs ?? 2500;
  const gapMs = plan.gapMs ?? 1000;
  const schema = 'failover';
  const s = ident(schema);
  const setup = createPool({ connectionString: cluster.primary.url, max: 2, applicationName: 'failover-test' });
  await migrate(setup, schema);
  await rateLimiterSet(setup, schema, { perSecond: 400, burst: 50 });
  await setup.end();

  const resend = new FakeResend({ processingMs: 5 });
  await resend.start();
  const env: Record<string, string> = {
    DATABASE_URL: url,
    LEASEHOLD_SCHEMA: schema,
    LOG_LEVEL: 'warn',
    EMAIL_PROVIDER: 'resend',
    RESEND_API_KEY: resend.apiKey,
    RESEND_BASE_URL: resend.url,
    EMAIL_FROM: 'Support <support@example.com>',
    // A send whose outcome was lost with the primary is retried when its lease ends.
    LEASEHOLD_LEASE_MS: '2000',
  };
  const children: Array<{ name: string; child: Child }> = [
    { name: 'expiry-worker', child: startNode(cliPath, ['expiry-worker'], env) },
    { name: 'delivery-worker', child: startNode(cliPath, ['delivery-worker'], env) },
  ];
  // The stand-in keeps no times: note when each delivery first shows.
  const seenAt: number[] = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      while (seenAt.length < resend.deliveries.length) seenAt.push(Date.now());
      await sleep(20);
    }
  })();
  let killedAt = 0;
  let deliveredBeforeKill = 0;
  let promotedAt = 0;
  let lateStarter: Child | undefined;
  let lateStarterRunning: Promise<number | undefined> = Promise.resolve(undefined);
  try {
    await Promise.all([
      children[0]!.child.waitForLine(/expiry lane running/, 60_000),
      children[1]!.child.waitForLine(/delivery lane running/, 60_000),
    ]);
    const seeder = createPool({ connectionString: cluster.primary.url, max: 1, applicationName: 'failover-test' });
    seeder.on('error', () => {});
    await seeder.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
       SELECT 'h-' || i, 'customer+' || i || '@example.com', now() + make_interval(secs => i * $2::float8 / $1 / 1000.0), 'seeded'
         FROM generate_series(1, $1::int) i`,
      [holds, spreadMs],
    );
    await seeder.end();
    const start = Date.now();
    await sleep(Math.max(0, start + killAtMs - Date.now()));
    await cluster.killPrimary();
    killedAt = Date.now();
    deliveredBeforeKill = resend.deliveries.length;
    if (plan.startDuringFailover) {
      lateStarter = startNode(cliPath, ['delivery-worker'], env);
      lateStarterRunning = lateStarter.waitForLine(/delivery lane running/, 120_000).then(
        () => Date.now(),
        () => undefined,
      );
      children.push({ name: 'delivery-worker started during the failover', child: lateStarter });
    }
    await sleep(gapMs);
    // The failover lasts until the late starter has met it (a boot takes
    // seconds on a loaded machine): promoted sooner, it would have had
    // nothing to wait for.
    for (const until = Date.now() + 30_000; lateStarter && !lateStarter.stderr().includes('"db.waiting"') && Date.now() < until; ) await sleep(50);
    await cluster.promote();
    promotedAt = Date.now();
    plan.onPromoted?.();

    const observer = createPool({ connectionString: cluster.standby.url, max: 1, applicationName: 'failover-test' });
    try {
      const drainBy = Date.now() + (plan.drainMs ?? 30_000);
      for (;;) {
        const { rows } = await observer.query<{ left: number }>(
          `SELECT (SELECT count(*) FROM ${s}.support_reservations WHERE status = 'held')::int
                + (SELECT count(*) FROM ${s}.email_outbox WHERE state = 'pending')::int AS left`,
        );
        if (rows[0]!.left === 0 || Date.now() > drainBy || children.some(({ child }) => child.process.exitCode !== null)) break;
        await sleep(100);
      }
      // A last look for a late duplicate: a lease still running out would resend now.
      await sleep(2500);
      const lateStarterRanAt = lateStarter ? await Promise.race([lateStarterRunning, sleep(5000).then(() => undefined)]) : undefined;
      const { rows } = await observer.query<{ id: string; status: string; intents: number; state: string | null; due_at: number; expired_at: number | null }>(
        `SELECT r.id, r.status, (SELECT count(*) FROM ${s}.email_outbox x WHERE x.reservation_id = r.id)::int AS intents,
                (SELECT o.state FROM ${s}.email_outbox o WHERE o.reservation_id = r.id LIMIT 1) AS state,
                extract(epoch FROM r.expires_at)::float8 * 1000 AS due_at, extract(epoch FROM r.expired_at)::float8 * 1000 AS expired_at
           FROM ${s}.support_reservations r ORDER BY r.id`,
      );
      const { rows: flagged } = await observer.query<{ id: string }>(`SELECT id FROM ${s}.email_outbox WHERE possible_duplicate`);
      const sendsPerIntent = new Map<string, number>();
      for (const request of resend.requests) {
        const emails = (Array.isArray(request.body) ? request.body : [request.body]) as Array<{ headers?: Record<string, string> }>;
        for (const email of emails) {
          const intent = email?.headers?.['X-Leasehold-Intent-Id'];
          if (intent) sendsPerIntent.set(intent, (sendsPerIntent.get(intent) ?? 0) + 1);
        }
      }
      const dueAt = new Map(rows.map((r) => [r.id, r.due_at]));
      const deliveriesPerIntent = new Map<string, number>();
      const lateness = new Map<string, number>();
      const deliveredAt = new Map<string, number>();
      const batched = new Set<string>();
      resend.deliveries.forEach((delivery, index) => {
        const intent = delivery.headers['X-Leasehold-Intent-Id'] ?? delivery.idempotencyKey ?? delivery.id;
        deliveriesPerIntent.set(intent, (deliveriesPerIntent.get(intent) ?? 0) + 1);
        const hold = intent.slice(intent.indexOf(':') + 1);
        const due = dueAt.get(hold);
        if (delivery.batchKey !== undefined) batched.add(intent);
        if (!deliveredAt.has(intent)) deliveredAt.set(intent, seenAt[index] ?? Date.now());
        if (!lateness.has(intent) && due !== undefined) lateness.set(intent, (deliveredAt.get(intent)! - Math.max(due, promotedAt)) / 1000);
      });
      const exits = children
        .filter(({ child }) => child.process.exitCode !== null || child.process.signalCode !== null)
        .map(({ name, child }) => `${name} exited ${child.process.exitCode ?? child.process.signalCode}: ${child.stderr().slice(-1500)}`);
      const sends = resend.requests.filter((r) => r.path.startsWith('/emails')).length;
      return {
        holds: rows.map((r) => ({ id: r.id, status: r.status, intents: r.intents, state: r.state, dueAt: r.due_at, expiredAt: r.expired_at })),
        sendsPerIntent,
        deliveredAt,
        batched,
        flagged: new Set(flagged.map((r) => r.id)),
        deliveriesPerIntent,
        requestsDeliveringNothing: sends - new Set(resend.deliveries.map((d) => d.idempotencyKey ?? d.batchKey ?? d.id)).size,
        lateness,
        exits,
        ...(lateStarter ? { lateStarterWaited: lateStarter.stderr().includes('"db.waiting"') } : {}),
        ...(lateStarterRanAt !== undefined ? { lateStarterRunningAfterS: (lateStarterRanAt - promotedAt) / 1000 } : {}),
        killedAt,
        promotedAt,
        deliveredBeforeKill,
        dueAfterKill: rows.filter((r) => r.due_at > killedAt).length,
      };
    } finally {
      await observer.end();
    }
  } finally {
    watching = false;
    await watcher;
    for (const { child } of children) {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGTERM');
    }
    await Promise.all(children.map(({ child }) => Promise.race([child.exited, sleep(10_000)])));
    for (const { child } of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
    await resend.stop();
  }
}
