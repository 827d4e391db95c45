import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intentsChannel } from '../../src/db/listener.js';
import { ident, type Queryable } from '../../src/db/pool.js';
import { holdsExpireDue, holdsExpireDueWithOutlook, holdsList } from '../../src/tables/holds.js';
import { attemptsRecentOutcomes } from '../../src/tables/attempts.js';
import { intentsLease, intentsList } from '../../src/tables/outbox.js';
import { laneStats } from '../../src/read/stats.js';
import { webhookEventsList } from '../../src/tables/webhook-events.js';
import { storiesErase, storiesPrune } from '../../src/retention/queries.js';
import { retentionOldest } from '../../src/retention/preview.js';
import { loadConfig } from '../../src/config.js';
import { createDatabaseMetrics } from '../../src/read/db-metrics.js';
import { checkHealth } from '../../src/read/health.js';
import { readStatus } from '../../src/read/status.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertSentStories } from '../helpers/holds.js';
import { planOf as planRecorded, plansOfAll } from '../helpers/plans.js';

/**
 * The hot paths must not grow with history: with many finished rows and a
 * few live ones, the planner must reach the live rows through the partial
 * indexes, not by scanning the tables.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('indexes');
  const s = ident(db.schema);
  await insertSentStories(db.pool, db.schema, 50_000);
  await db.pool.query(
    `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, started_at, finished_at, outcome, receipt)
     SELECT id, 1, gen_random_uuid(), now() - interval '2 days', now() - interval '2 days', 'accepted', 'r'
       FROM ${s}.email_outbox`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
     SELECT 'live-' || i, 'c@example.com', now() + make_interval(secs => i), 'x' FROM generate_series(1, 20) i`,
  );
  // One provider event per sent intent, a few of them hard bounces and complaints.
  await db.pool.query(
    `INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, bounce_type, occurred_at)
     SELECT 'sandbox', 'e-' || o.id, o.id, o.id, k.kind, CASE WHEN k.kind = 'bounced' THEN 'hard' END, now() - interval '2 days'
       FROM ${s}.email_outbox o, generate_series(1, 1) g,
            LATERAL (SELECT CASE WHEN abs(hashtext(o.id)) % 100 = 0 THEN 'bounced'
                                 WHEN abs(hashtext(o.id)) % 1000 = 1 THEN 'complained' ELSE 'delivered' END AS kind) k`,
  );
  // Application webhooks: a long delivered history, a few dead and pending.
  await db.pool.query(
    `INSERT INTO ${s}.webhook_events (id, endpoint, type, hold_id, payload, occurred_at, created_at, state, finished_at)
     SELECT 'msg_' || i, 'app', 'hold.expired', 'h' || i, '{}', now() - make_interval(secs => i), now() - make_interval(secs => i),
            CASE WHEN i % 5000 = 0 THEN 'dead' WHEN i < 5 THEN 'pending' ELSE 'delivered' END,
            CASE WHEN i >= 5 THEN now() END
       FROM generate_series(1, 50000) i`,
  );
  await db.pool.query(`ANALYZE ${s}.webhook_events`);
  await db.pool.query(`ANALYZE ${s}.email_events`);
  await db.pool.query(`ANALYZE ${s}.support_reservations`);
  await db.pool.query(`ANALYZE ${s}.email_outbox`);
  await db.pool.query(`ANALYZE ${s}.email_attempts`);
});
afterAll(() => db.close());

/**
 * EXPLAIN the statement a query function really sends: a recording client
 * captures its text and parameters, then the real database plans it
 * (EXPLAIN without ANALYZE executes nothing).
 */
const planOf = (call: (db: Queryable) => Promise<unknown>) => planRecorded(db.pool, call);

describe('hot paths use partial indexes', () => {
  it('the expiry statement reaches due holds through support_reservations_due', async () => {
    const text = await planOf((q) => holdsExpireDue(q, db.schema, 500, null, { channel: intentsChannel(db.schema) }));
    expect(text).toContain('support_reservations_due');
    expect(text).not.toMatch(/Seq Scan on support_reservations/);
  });

  it('the expiry statement skips holds waiting on their hook through one hashed read of the failures (not a scan per hold), still through support_reservations_due', async () => {
    const text = await planOf((q) => holdsExpireDue(q, db.schema, 500, null, { channel: intentsChannel(db.schema) }));
    expect(text).toContain('support_reservations_due');
    // Read once into a hash each due hold is looked up in.
    expect(text).toMatch(/hashed SubPlan (\d+)[\s\S]*SubPlan \1\n[^\n]*expire_hook_failures/);
    expect(text).not.toMatch(/Seq Scan on support_reservations/);
  });

  it('the expiry statement with its outlook reads the outlook through the due index too, never the table', async () => {
    const text = await planOf((q) => holdsExpireDueWithOutlook(q, db.schema, 500, null, { channel: intentsChannel(db.schema) }, null));
    expect(text).toContain('support_reservations_due');
    expect(text).not.toMatch(/Seq Scan on support_reservations/);
  });

  it('GET /v1/holds pages newest first through support_reservations_created, without sorting the table', async () => {
    for (const status of [undefined, 'expired'] as const) {
      const text = await planOf((q) => holdsList(q, db.schema, { limit: 50, ...(status ? { status } : {}) }));
      expect(text, text).toContain('support_reservations_created');
      expect(text, text).not.toMatch(/Sort|Seq Scan on support_reservations/);
    }
    // The few live holds may come through the due index and be sorted: bounded by live holds, not history.
    const held = await planOf((q) => holdsList(q, db.schema, { limit: 50, status: 'held' }));
    expect(held, held).not.toMatch(/Seq Scan on support_reservations/);
  });

  it('GET /v1/intents pages newest first through email_outbox_state_listing, one state or all, any tenant, without sorting the table', async () => {
    const first = await intentsList(db.pool, db.schema, { limit: 3 });
    expect(first.intents).toHaveLength(3);
    for (const options of [{}, { state: 'sent' as const }, { tenant: '' }, { cursor: first.nextCursor! }, { state: 'dead' as const, cursor: first.nextCursor! }]) {
      const text = await planOf((q) => intentsList(q, db.schema, { limit: 50, ...options }));
      expect(text, text).toContain('email_outbox_state_listing');
      expect(text, text).not.toMatch(/Seq Scan on email_outbox/);
      // A sort only ever of pending intents (the live ones, through a
      // pending-only index), never of the finished history.
      const lines = text.split('\n');
      for (const [i, line] of lines.entries()) {
        if (!/(?<!Incremental )Sort {2}\(/.test(line)) continue;
        const scan = lines.slice(i + 1).find((l) => l.includes(' Scan '))!;
        expect(scan, text).toMatch(/email_outbox_(available|pending_age|tenant_due)\b/);
      }
    }
    // The merge pages exactly as one ordered walk would.
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM ${ident(db.schema)}.email_outbox ORDER BY created_at DESC, id DESC LIMIT 6`);
    const second = await intentsList(db.pool, db.schema, { limit: 3, cursor: first.nextCursor! });
    expect([...first.intents, ...second.intents].map((i) => i.id)).toEqual(rows.map((r) => r.id));
  });

  it('the webhook listing pages newest first through webhook_events_listing, one state or all, without sorting the table', async () => {
    for (const state of [undefined, 'dead', 'delivered'] as const) {
      const text = await planOf((q) => webhookEventsList(q, db.schema, { limit: 50, ...(state ? { state } : {}) }));
      expect(text, text).toContain('webhook_events_listing');
      // (A Merge Append names its Sort Key, and the pending ones may come
      // presorted through their own index; a full Sort is what must not be there.)
      expect(text, text).not.toMatch(/(?<!Incremental )Sort {2}\(|Seq Scan on webhook_events/);
    }
    // All states merged, newest first across them.
    const listed = await webhookEventsList(db.pool, db.schema, { limit: 6 });
    expect(listed.map((e) => e.id)).toEqual(['msg_1', 'msg_2', 'msg_3', 'msg_4', 'msg_5', 'msg_6']);
    expect(listed.map((e) => e.state)).toEqual(['pending', 'pending', 'pending', 'pending', 'delivered', 'delivered']);
    expect((await webhookEventsList(db.pool, db.schema, { limit: 3, state: 'dead' })).map((e) => e.id)).toEqual(['msg_5000', 'msg_10000', 'msg_15000']);
  });

  it('the lease statement reaches due intents through email_outbox_available', async () => {
    const text = await planOf((q) =>
      intentsLease(q, db.schema, { limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null }),
    );
    expect(text).toContain('email_outbox_available');
    expect(text).not.toMatch(/Seq Scan on email_outbox/);
  });

  it('recent sends by outcome read email_attempts_finished, not the attempts history', async () => {
    const text = await planOf((q) => attemptsRecentOutcomes(q, db.schema));
    expect(text).toContain('email_attempts_finished');
    expect(text).not.toMatch(/Seq Scan on email_attempts/);
  });

  it('the lane snapshot reads the oldest-pending age through email_outbox_pending_age and due holds through their own index', async () => {
    const text = await planOf((q) => laneStats(q, db.schema));
    expect(text).toContain('email_outbox_pending_age');
    expect(text).toContain('support_reservations_due');
  });
});

describe('retention reaches finished stories through the partial indexes of 0009', () => {
  // days: 1, so all 50,000 finished stories are candidates: the worst case for a plan.
  it('the prune batch walks support_reservations_finished and reaches intents and attempts by key', async () => {
    const text = await planOf((q) => storiesPrune(q, db.schema, { now: null, days: 1, limit: 1000 }));
    expect(text).toContain('support_reservations_finished');
    expect(text).not.toMatch(/Seq Scan on (support_reservations|email_outbox|email_attempts)/);
  });

  it('the erase batch walks support_reservations_unerased', async () => {
    const text = await planOf((q) => storiesErase(q, db.schema, { now: null, days: 1, limit: 1000 }));
    expect(text).toContain('support_reservations_unerased');
    expect(text).not.toMatch(/Seq Scan on (support_reservations|email_outbox|email_attempts)/);
  });

  it('the oldest-retained gauges read one end of each index', async () => {
    const text = await planOf((q) => retentionOldest(q, db.schema));
    expect(text).toContain('support_reservations_finished');
    expect(text).toContain('support_reservations_unerased');
    expect(text).not.toMatch(/Seq Scan/);
  });
});

describe('status, health and metrics read no history (issue 10)', () => {
  // Every statement /v1/status, `leasehold status`, /healthz and /metrics send,
  // planned against 50,000 finished stories (attempts and events included).
  const statusStatements = async () => {
    const config = loadConfig({});
    const all = [
      ...(await plansOfAll(db.pool, (q) => readStatus(q, db.schema, config))),
      ...(await plansOfAll(db.pool, (q) => checkHealth({ db: q, schema: db.schema, promises: config }))),
      ...(await plansOfAll(db.pool, (q) =>
        createDatabaseMetrics({ db: q, schema: db.schema, promises: config, retention: config.retention }).metrics(),
      )),
    ];
    return all;
  };

  it('no statement scans a history table; counts come from the counter tables', async () => {
    const plans = await statusStatements();
    // The lane snapshot (status; health), the scrape's one statement. The recorder answers no rows, so
    // status stops at its first statement; recent sends are planned on their own above.
    expect(plans.length).toBeGreaterThanOrEqual(3);
    expect(plans.filter((p) => p.text.includes('email_accepted_hours') && p.text.includes('email_outbox_counts'))).toHaveLength(1);
    for (const { text, plan } of plans) {
      expect(plan, `${text}\n${plan}`).not.toMatch(/Seq Scan on (support_reservations|email_outbox|email_attempts|email_events|suppressions)\b/);
      // A GROUP BY over the outbox or a count of the suppression list is gone for good.
      expect(text).not.toMatch(/FROM \S+\.email_outbox GROUP BY|count\(\*\)[^)]*FROM \S+\.suppressions\b/);
    }
    const texts = plans.map((p) => p.text).join('\n');
    for (const table of ['email_outbox_counts', 'suppression_count', 'email_accepted_hours', 'delivery_control', 'rate_limiter']) {
      expect(texts).toContain(table);
    }
  });

  it('the 24 h reputation counts read the hourly send counts and the partial indexes of the events, never the attempts', async () => {
    const plans = await statusStatements();
    const events = plans.find((p) => p.text.includes('email_events'))!;
    expect(events.plan).toContain('email_events_hard_bounces');
    expect(events.plan).toContain('email_events_complaints');
    const sends = plans.find((p) => p.text.includes('email_accepted_hours'))!;
    expect(sends.plan).not.toMatch(/email_attempts/);
    expect(plans.filter((p) => p.text.includes('email_attempts') && p.text.includes("outcome = 'accepted'"))).toEqual([]);
  });
});
