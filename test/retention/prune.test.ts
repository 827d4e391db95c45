import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { createHold, getHold } from '../../src/holds/holds.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { replayIntent } from '../../src/ops/replay.js';
import { Pruner } from '../../src/retention/prune.js';
import { PruneWorker } from '../../src/retention/prune-worker.js';
import { DEFAULT_RETENTION, type RetentionPolicy } from '../../src/model/retention-policy.js';
import { retentionPreview } from '../../src/retention/preview.js';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { LogCapture } from '../helpers/server.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ids, writeStory, nonZero } from '../helpers/retention-stories.js';

let db: TestDatabase;
beforeEach(async () => {
  db = await testDatabase('retention');
});
afterEach(() => db.close());

const policy = (p: Partial<RetentionPolicy> = {}): RetentionPolicy => ({ ...DEFAULT_RETENTION, ...p });
const pruner = (p: Partial<RetentionPolicy> = {}, extra: Partial<ConstructorParameters<typeof Pruner>[0]> = {}) =>
  new Pruner({ pool: db.pool, schema: db.schema, policy: policy(p), ...extra });

/** Stories on both sides of a 30-day retention, and every kind that must survive it. */
async function seedMixed(): Promise<void> {
  const stories = [
    // Past the retention: deleted.
    { id: 'old-confirmed', status: 'confirmed', endedDaysAgo: 31 },
    { id: 'old-cancelled', status: 'cancelled', endedDaysAgo: 90 },
    { id: 'old-sent', status: 'expired', endedDaysAgo: 35, intent: 'sent', attempts: [{ outcome: 'failed', error: 'timeout' }, { outcome: 'accepted' }] },
    { id: 'old-rejected', status: 'expired', endedDaysAgo: 40, intent: 'rejected' },
    { id: 'old-dead', status: 'expired', endedDaysAgo: 60, intent: 'dead' },
    // Protected.
    { id: 'held-long', status: 'held', endedDaysAgo: 45 },
    { id: 'old-pending', status: 'expired', endedDaysAgo: 50, intent: 'pending', attempts: [{ outcome: 'failed', error: 'timeout' }, { outcome: null }], leased: true },
    { id: 'old-hold-recent-email', status: 'expired', endedDaysAgo: 40, intent: 'dead', intentEndedDaysAgo: 5 },
    { id: 'young-confirmed', status: 'confirmed', endedDaysAgo: 29 },
    { id: 'young-sent', status: 'expired', endedDaysAgo: 2, intent: 'sent' },
  ] as const;
  for (const story of stories) await writeStory(db.pool, db.schema, { ...story, attempts: 'attempts' in story ? [...story.attempts] : undefined });
}

const SURVIVORS = ['held-long', 'old-hold-recent-email', 'old-pending', 'young-confirmed', 'young-sent'];

describe('prune', () => {
  it('deletes only finished stories past the retention: attempts, intents and holds; never a held hold, a pending intent or what it needs', async () => {
    await seedMixed();
    const run = await pruner({ erasePiiAfterDays: null }).runUntilDone();
    expect(run.complete).toBe(true);
    expect(nonZero(run.pruned)).toEqual({ email_attempts: 4, email_outbox: 3, support_reservations: 5 });
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(SURVIVORS);
    expect(await ids(db.pool, db.schema, 'email_outbox', 'reservation_id')).toEqual(['old-hold-recent-email', 'old-pending', 'young-sent']);
    // The pending intent keeps both attempts: its next lease reads the last one.
    const { rows } = await db.pool.query(
      `SELECT intent_id, attempt FROM ${ident(db.schema)}.email_attempts ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { intent_id: 'reservation-expired:old-hold-recent-email', attempt: 1 },
      { intent_id: 'reservation-expired:old-pending', attempt: 1 },
      { intent_id: 'reservation-expired:old-pending', attempt: 2 },
      { intent_id: 'reservation-expired:young-sent', attempt: 1 },
    ]);
    // Nothing left to do: a second run finds nothing.
    expect(nonZero((await pruner({ erasePiiAfterDays: null }).runUntilDone()).pruned)).toEqual({});
  });

  it('a story whose email is still pending is pruned only after the email finishes and ages out', async () => {
    await writeStory(db.pool, db.schema, { id: 'p', status: 'expired', endedDaysAgo: 50, intent: 'pending' });
    await pruner({ erasePiiAfterDays: null }).runUntilDone();
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(['p']);
    // The email is finally sent... 31 days ago (time moved by backdating the row).
    await db.pool.query(
      `UPDATE ${ident(db.schema)}.email_outbox SET state = 'sent', receipt = 'r', sent_at = now() - interval '31 days', finished_at = now() - interval '31 days'`,
    );
    await pruner({ erasePiiAfterDays: null }).runUntilDone();
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual([]);
  });

  it('moves time through `now`, not the wall clock', async () => {
    await writeStory(db.pool, db.schema, { id: 'c', status: 'confirmed', endedDaysAgo: 1 });
    await pruner({ erasePiiAfterDays: null }).runUntilDone();
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(['c']);
    const later = { now: () => new Date(Date.now() + 30 * 86_400_000) };
    await pruner({ erasePiiAfterDays: null }, { clock: later }).runUntilDone();
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual([]);
  });

  it('retention off deletes nothing', async () => {
    await seedMixed();
    const run = await pruner({ retentionDays: null, erasePiiAfterDays: null }).runUntilDone();
    expect(run.pruned).toEqual({});
    expect(await ids(db.pool, db.schema, 'support_reservations')).toHaveLength(10);
  });

  it('dry run changes nothing and counts exactly what the run then does', async () => {
    await seedMixed();
    const snapshot = async () =>
      (
        await db.pool.query(
          `SELECT (SELECT json_agg(r ORDER BY id) FROM ${ident(db.schema)}.support_reservations r) AS holds,
                  (SELECT json_agg(o ORDER BY id) FROM ${ident(db.schema)}.email_outbox o) AS intents,
                  (SELECT json_agg(a ORDER BY intent_id, attempt) FROM ${ident(db.schema)}.email_attempts a) AS attempts`,
        )
      ).rows[0];
    const before = await snapshot();
    const preview = await retentionPreview(db.pool, db.schema, { now: null, retentionDays: 30, erasePiiAfterDays: 7 });
    expect(await snapshot()).toEqual(before);
    expect(preview.keptPendingStories).toBe(2);
    const run = await pruner().runUntilDone();
    expect(nonZero(run.pruned)).toEqual(nonZero(preview.prune));
    expect(nonZero(run.erased)).toEqual(nonZero(preview.erase));
    expect(nonZero(preview.erase)).toEqual({ support_reservations: 1 });
  });

  it('logs one retention.pruned event per table and batch, with the count and never an address; counts by table', async () => {
    await seedMixed();
    const logs = new LogCapture();
    const metrics = createMetrics();
    await pruner({ erasePiiAfterDays: null, batchSize: 2 }, { logger: createLogger({ level: 'info', destination: logs }), metrics }).runUntilDone();
    const events = logs.events().filter((e) => e.event === 'retention.pruned');
    expect(events.length).toBeGreaterThan(3);
    for (const e of events) expect(Object.keys(e).sort()).toEqual(['count', 'event', 'level', 'ms', 'msg', 'name', 'pid', 'table', 'time']);
    const total = (table: string) => events.filter((e) => e.table === table).reduce((n, e) => n + (e.count as number), 0);
    expect([total('email_attempts'), total('email_outbox'), total('support_reservations')]).toEqual([4, 3, 5]);
    expect(logs.text).not.toContain('@example.com');
    const counter = await metrics.retentionPruned.get();
    expect(Object.fromEntries(counter.values.map((v) => [v.labels.table, v.value]))).toEqual({
      email_attempts: 4,
      email_outbox: 3,
      support_reservations: 5,
    });
  });
});

describe('many pruners at once', () => {
  it('two prune workers share the work: every row deleted once, counted once, no deadlock', async () => {
    const s = ident(db.schema);
    await db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, confirmed_at, request_hash)
       SELECT 'h' || g, 'p' || g || '@example.com', CASE WHEN g % 2 = 0 THEN 'expired' ELSE 'confirmed' END,
              now() - interval '40 days', now() - interval '41 days',
              CASE WHEN g % 2 = 0 THEN now() - interval '40 days' - make_interval(secs => g) END,
              CASE WHEN g % 2 = 1 THEN now() - interval '40 days' - make_interval(secs => g) END, 'x'
         FROM generate_series(1, 3000) g`,
    );
    await db.pool.query(
      `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, sent_at, finished_at, receipt, last_error)
       SELECT 'reservation-expired:' || id, id, customer_email, 'reservation-expired', 'sent', expired_at, expired_at, expired_at, expired_at, 'r',
              'earlier: ' || customer_email || ' throttled'
         FROM ${s}.support_reservations WHERE status = 'expired'`,
    );
    await db.pool.query(
      `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, started_at, finished_at, outcome, receipt)
       SELECT id, a, gen_random_uuid(), finished_at, finished_at, 'accepted', 'r' FROM ${s}.email_outbox, generate_series(1, 2) a`,
    );
    // Half of them only need erasing (ended 10 days ago): both passes run on both workers.
    await db.pool.query(
      `UPDATE ${s}.support_reservations SET expired_at = expired_at + interval '30 days', confirmed_at = confirmed_at + interval '30 days'
        WHERE (substr(id, 2)::int / 2) % 2 = 0`,
    );
    await db.pool.query(`UPDATE ${s}.email_outbox o SET finished_at = r.expired_at, sent_at = r.expired_at FROM ${s}.support_reservations r WHERE r.id = o.reservation_id`);

    const workers = [0, 1].map(() => new PruneWorker({ pool: db.pool, schema: db.schema, policy: policy({ batchSize: 50 }) }));
    const totals = await Promise.all(
      workers.map(async (w) => {
        const pruned: Record<string, number> = {};
        const erased: Record<string, number> = {};
        for (;;) {
          const round = await w.runOnce();
          for (const [t, n] of Object.entries(round.pruned)) pruned[t] = (pruned[t] ?? 0) + n;
          for (const [t, n] of Object.entries(round.erased)) erased[t] = (erased[t] ?? 0) + n;
          if (!round.full) return { pruned, erased };
        }
      }),
    );
    const sum = (key: 'pruned' | 'erased', table: string) => totals.reduce((n, t) => n + (t[key][table] ?? 0), 0);
    const { rows } = await db.pool.query(
      `SELECT (SELECT count(*) FROM ${s}.support_reservations)::int AS holds,
              (SELECT count(*) FROM ${s}.support_reservations WHERE erased_at IS NOT NULL)::int AS erased,
              (SELECT count(*) FROM ${s}.email_outbox)::int AS intents,
              (SELECT count(*) FROM ${s}.email_attempts)::int AS attempts`,
    );
    // 1,500 stories pruned, 1,500 kept and erased; every row counted by exactly one worker.
    expect(rows[0]).toEqual({ holds: 1500, erased: 1500, intents: 750, attempts: 1500 });
    expect(sum('pruned', 'support_reservations')).toBe(1500);
    expect(sum('pruned', 'email_outbox')).toBe(750);
    expect(sum('pruned', 'email_attempts')).toBe(1500);
    expect(sum('erased', 'support_reservations')).toBe(1500);
    expect(sum('erased', 'email_outbox')).toBe(750);
    // Both took part.
    for (const t of totals) expect((t.pruned.support_reservations ?? 0) + (t.erased.support_reservations ?? 0)).toBeGreaterThan(0);
  });

  it('a story whose intent another transaction has locked is skipped whole, and pruned once it is free', async () => {
    await writeStory(db.pool, db.schema, { id: 'busy', status: 'expired', endedDaysAgo: 40, intent: 'sent' });
    await writeStory(db.pool, db.schema, { id: 'free', status: 'confirmed', endedDaysAgo: 40 });
    const other = await db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${ident(db.schema)}.email_outbox WHERE id = 'reservation-expired:busy' FOR UPDATE`);
      const run = await pruner({ erasePiiAfterDays: null }).runUntilDone();
      expect(nonZero(run.pruned)).toEqual({ support_reservations: 1 });
      expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(['busy']);
      expect(await ids(db.pool, db.schema, 'email_attempts', 'intent_id')).toEqual(['reservation-expired:busy']);
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }
    await pruner({ erasePiiAfterDays: null }).runUntilDone();
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual([]);
  });

  it('a batch waits for a lock no longer than its lock timeout', async () => {
    await writeStory(db.pool, db.schema, { id: 'stuck', status: 'expired', endedDaysAgo: 40, intent: 'sent' });
    const other = await db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${ident(db.schema)}.email_attempts WHERE intent_id = 'reservation-expired:stuck' FOR UPDATE`);
      const started = Date.now();
      await expect(pruner({ erasePiiAfterDays: null }, { lockTimeoutMs: 200 }).runOnce()).rejects.toMatchObject({ code: '55P03' });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }
  });
});

describe('erasure by age', () => {
  it('erases every address of a story that ended before the cutoff while its timeline stays', async () => {
    await writeStory(db.pool, db.schema, {
      id: 'e1',
      status: 'expired',
      endedDaysAgo: 8,
      email: 'Ana.Lopez@Example.com',
      metadata: { contact: 'Ana.Lopez@Example.com', slot: 'tuesday', nested: { cc: ['b@example.org'] } },
      intent: 'sent',
      lastError: 'provider said: mailbox Ana.Lopez@Example.com full',
      attempts: [{ outcome: 'failed', error: '452 <Ana.Lopez@Example.com>: mailbox full' }, { outcome: 'accepted' }],
    });
    await writeStory(db.pool, db.schema, { id: 'e2', status: 'cancelled', endedDaysAgo: 8 });
    await writeStory(db.pool, db.schema, { id: 'young', status: 'confirmed', endedDaysAgo: 6 });
    await writeStory(db.pool, db.schema, { id: 'pending', status: 'expired', endedDaysAgo: 20, intent: 'pending' });
    await writeStory(db.pool, db.schema, { id: 'held', status: 'held', endedDaysAgo: 20 });
    const s = ident(db.schema);
    const before = (await db.pool.query(`SELECT id, status, expires_at, created_at, expired_at, cancelled_at FROM ${s}.support_reservations ORDER BY id`)).rows;

    const run = await pruner().runUntilDone();
    expect(nonZero(run.erased)).toEqual({ email_attempts: 1, email_outbox: 1, support_reservations: 2 });

    const hold = await getHold(db.pool, 'e1', { schema: db.schema });
    expect(hold).toMatchObject({ customerEmail: null, status: 'expired', metadata: { contact: '[erased]', slot: 'tuesday', nested: { cc: ['[erased]'] } } });
    expect(hold?.erasedAt).toBeInstanceOf(Date);
    // The story is still told, and says when its personal data went.
    const timeline = await holdTimeline(db.pool, db.schema, 'e1');
    expect(timeline.attempts.map((a) => a.outcome)).toEqual(['failed', 'accepted']);
    expect(timeline.moments.emailAcceptedAt).toBeInstanceOf(Date);
    expect(formatTimeline(timeline).join('\n')).toMatch(/personal data erased at \d{4}-/);
    const { rows } = await db.pool.query(
      `SELECT r.request_hash, o.recipient, o.last_error, o.state, o.receipt, o.sent_at IS NOT NULL AS sent,
              array_agg(a.error ORDER BY a.attempt) AS errors, array_agg(a.outcome ORDER BY a.attempt) AS outcomes
         FROM ${s}.support_reservations r JOIN ${s}.email_outbox o ON o.reservation_id = r.id
         JOIN ${s}.email_attempts a ON a.intent_id = o.id WHERE r.id = 'e1' GROUP BY 1, 2, 3, 4, 5, 6`,
    );
    expect(rows[0]).toEqual({
      request_hash: 'erased',
      recipient: null,
      last_error: 'provider said: mailbox [erased] full',
      state: 'sent',
      receipt: 'receipt-e1',
      sent: true,
      errors: ['452 <[erased]>: mailbox full', null],
      outcomes: ['failed', 'accepted'],
    });
    // Timeline columns are untouched.
    expect((await db.pool.query(`SELECT id, status, expires_at, created_at, expired_at, cancelled_at FROM ${s}.support_reservations ORDER BY id`)).rows).toEqual(before);
    // Not yet due, pending, held: untouched.
    const kept = await db.pool.query(`SELECT id FROM ${s}.support_reservations WHERE customer_email IS NOT NULL ORDER BY id`);
    expect(kept.rows.map((r) => r.id)).toEqual(['held', 'pending', 'young']);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE recipient IS NULL`)).rows[0].n).toBe(1);
  });

  it('an erased intent cannot be replayed, and the database refuses a pending intent without a recipient', async () => {
    await writeStory(db.pool, db.schema, { id: 'r', status: 'expired', endedDaysAgo: 10, intent: 'dead' });
    await pruner().runUntilDone();
    await expect(replayIntent(db.pool, 'reservation-expired:r', { schema: db.schema })).rejects.toThrow(/recipient was erased/);
    await expect(
      db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'pending', finished_at = NULL`),
    ).rejects.toThrow(/email_outbox_recipient_unless_finished/);
    // A held hold is never erased; an erased hold says when.
    await writeStory(db.pool, db.schema, { id: 'live', status: 'held', endedDaysAgo: 0 });
    await expect(
      db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET customer_email = NULL, erased_at = now() WHERE id = 'live'`),
    ).rejects.toThrow(/support_reservations_erasure/);
    await expect(
      db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET erased_at = NULL WHERE id = 'r'`),
    ).rejects.toThrow(/support_reservations_erasure/);
  });

  it('an idempotent retry of an erased hold is a conflict, not the erased hold back', async () => {
    await createHold(db.pool, { id: 'again', customerEmail: 'x@example.com', ttlSeconds: 60 }, { schema: db.schema });
    await db.pool.query(
      `UPDATE ${ident(db.schema)}.support_reservations SET status = 'confirmed', confirmed_at = now() - interval '8 days' WHERE id = 'again'`,
    );
    await pruner().runUntilDone();
    await expect(createHold(db.pool, { id: 'again', customerEmail: 'x@example.com', ttlSeconds: 60 }, { schema: db.schema })).rejects.toThrow(
      /different content/,
    );
  });
});
