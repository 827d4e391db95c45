import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ident, type Queryable } from '../../src/db/pool.js';
import { addressHash } from '../../src/model/address.js';
import { createDatabaseMetrics } from '../../src/read/db-metrics.js';
import { EVENT_WINDOW_HOURS, reputationFromRow, reputationSql } from '../../src/read/event-metrics.js';
import { scrapeReading } from '../../src/read/scrape.js';
import { laneStats } from '../../src/read/stats.js';
import { retentionOldest } from '../../src/retention/preview.js';
import { acceptedInWindow } from '../../src/tables/accepted-hours.js';
import { suppressionCountGet } from '../../src/tables/suppression-count.js';
import { insertDueHolds } from '../helpers/holds.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { writeStory } from '../helpers/retention-stories.js';

let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('scrape');
  s = ident(db.schema);
  // Some of everything the gauges show: due holds, finished stories (sent, rejected, pending), events, suppressions.
  await insertDueHolds(db.pool, db.schema, 3, { pastSeconds: 90 });
  await writeStory(db.pool, db.schema, { id: 'sent-old', status: 'expired', endedDaysAgo: 3 });
  await writeStory(db.pool, db.schema, { id: 'sent-new', status: 'expired', endedDaysAgo: 0 });
  await writeStory(db.pool, db.schema, { id: 'rejected', status: 'expired', endedDaysAgo: 0, intent: 'rejected' });
  await writeStory(db.pool, db.schema, { id: 'waiting', status: 'expired', endedDaysAgo: 0, intent: 'pending' });
  await writeStory(db.pool, db.schema, { id: 'confirmed', status: 'confirmed', endedDaysAgo: 5 });
  for (const [kind, bounce] of [['bounced', 'hard'], ['bounced', 'soft'], ['complained', null]] as const) {
    await db.pool.query(
      `INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, bounce_type, occurred_at)
       VALUES ('resend', gen_random_uuid()::text, 'm', 'reservation-expired:sent-new', $1, $2, now() - interval '1 minute')`,
      [kind, bounce],
    );
  }
  await db.pool.query(`INSERT INTO ${s}.suppressions (address_hash, address, reason) VALUES ($1, 'gone@example.com', 'hard_bounce')`, [
    addressHash('gone@example.com'),
  ]);
});
afterAll(() => db.close());

/** A Queryable over the pool that keeps every statement sent and the names of the columns it answered. */
function recording(): { db: Queryable; texts: string[]; columns: string[][] } {
  const texts: string[] = [];
  const columns: string[][] = [];
  return {
    texts,
    columns,
    db: {
      query: (async (text: string, values?: unknown[]) => {
        texts.push(text);
        const result = await db.pool.query(text, values);
        columns.push(result.fields.map((f) => f.name));
        return result;
      }) as Queryable['query'],
    },
  };
}

describe('the scrape reading', () => {
  it('is what the lane, reputation and retention readers each report alone', async () => {
    const reading = await scrapeReading(db.pool, db.schema);
    const alone = await db.pool.query(reputationSql(s, '$1::int'), [EVENT_WINDOW_HOURS]);

    const lanes = await laneStats(db.pool, db.schema);
    // Ages move with now(): compare them within the time the two reads took.
    expect(reading.lanes.expiry.oldestDueAgeSeconds).toBeCloseTo(lanes.expiry.oldestDueAgeSeconds, 0);
    expect(reading.lanes.delivery.oldestPendingAgeSeconds).toBeCloseTo(lanes.delivery.oldestPendingAgeSeconds, 0);
    const ageless = (l: typeof lanes) => ({ ...l, expiry: { ...l.expiry, oldestDueAgeSeconds: 0 }, delivery: { ...l.delivery, oldestPendingAgeSeconds: 0 } });
    expect(ageless(reading.lanes)).toEqual(ageless(lanes));
    expect(reading.lanes.expiry.dueHolds).toBe(3);
    expect(reading.lanes.delivery.intentsByState).toMatchObject({ pending: 1, sent: 2, rejected: 1 });

    expect(reading.reputation).toEqual(reputationFromRow(alone.rows[0]));
    expect(reading.reputation).toEqual({
      accepted: await acceptedInWindow(db.pool, db.schema, EVENT_WINDOW_HOURS),
      hardBounces: 1,
      complaints: 1,
      suppressions: await suppressionCountGet(db.pool, db.schema),
    });
    expect(reading.reputation.suppressions).toBe(1);

    const retained = await retentionOldest(db.pool, db.schema);
    expect(Object.keys(reading.retained.oldestAgeSeconds).sort()).toEqual(Object.keys(retained.oldestAgeSeconds).sort());
    for (const [table, age] of Object.entries(retained.oldestAgeSeconds)) expect(reading.retained.oldestAgeSeconds[table]).toBeCloseTo(age, 0);
    // The confirmed story ended five days ago: the oldest finished one.
    expect(reading.retained.oldestAgeSeconds.support_reservations).toBeGreaterThan(5 * 86_400 - 60);
    expect(reading.retained.oldestUnerasedAgeSeconds).toBeCloseTo(retained.oldestUnerasedAgeSeconds, 0);
  });
});

describe('a /metrics scrape', () => {
  it('sends one statement for every database gauge and shows its numbers', async () => {
    const config = loadConfig({});
    const { db: recorder, texts, columns } = recording();
    const registry = createDatabaseMetrics({ db: recorder, schema: db.schema, promises: config, retention: config.retention });
    const text = await registry.metrics();
    expect(texts).toHaveLength(1);
    // The parts share one row: two columns of one name would leave only the last in the row object.
    expect(columns[0]!.length).toBeGreaterThan(20);
    expect(new Set(columns[0]).size).toBe(columns[0]!.length);
    expect(texts[0]).toContain('email_outbox_counts');
    expect(texts[0]).toContain('email_accepted_hours');
    expect(texts[0]).toContain('support_reservations');
    expect(text).toMatch(/^leasehold_database_up 1$/m);
    expect(text).toMatch(/^leasehold_due_holds 3$/m);
    expect(text).toMatch(/^leasehold_intents\{state="pending"\} 1$/m);
    expect(text).toMatch(/^leasehold_suppressions 1$/m);
    expect(text).toMatch(/^leasehold_retention_oldest_age_seconds\{table="support_reservations"\} \d+/m);
    const accepted = await acceptedInWindow(db.pool, db.schema, EVENT_WINDOW_HOURS);
    expect(accepted).toBeGreaterThan(0);
    expect(text).toContain(`leasehold_email_bounce_rate ${1 / accepted}`);
  });

  it('with the database unreachable every database gauge is NaN and leasehold_database_up is 0', async () => {
    const config = loadConfig({});
    const failing: Queryable = { query: (async () => { throw new Error('connection refused'); }) as unknown as Queryable['query'] };
    const text = await createDatabaseMetrics({ db: failing, schema: db.schema, promises: config, retention: config.retention }).metrics();
    expect(text).toMatch(/^leasehold_database_up 0$/m);
    for (const name of ['leasehold_due_holds', 'leasehold_email_backlog', 'leasehold_email_bounce_rate', 'leasehold_suppressions', 'leasehold_retention_oldest_unerased_age_seconds']) {
      // prom-client writes NaN as `Nan`, which Prometheus reads as NaN.
      expect(text).toMatch(new RegExp(`^${name} Nan$`, 'm'));
    }
    // Configuration gauges do not need the database.
    expect(text).toMatch(/^leasehold_expiry_promise_seconds \d+$/m);
  });
});
