import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { RETENTION_TABLES, type RetentionTables } from '../../src/retention/policy.js';
import { addressHash } from '../../src/model/address.js';
import { DEFAULT_RETENTION } from '../../src/model/retention-policy.js';
import { Pruner } from '../../src/retention/prune.js';
import { retentionOldest, retentionPreview } from '../../src/retention/preview.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { writeStory } from '../helpers/retention-stories.js';

/**
 * The tables later migrations added (email_messages 0006; email_events and
 * suppressions 0008) are reached through their entries in RETENTION_TABLES
 * (src/retention/policy.ts), nothing else.
 */
const TABLES = RETENTION_TABLES;

let db: TestDatabase;
let s: string;
beforeEach(async () => {
  db = await testDatabase('retention_ext');
  s = ident(db.schema);
});
afterEach(() => db.close());

async function event(intentId: string | null, reason: string | null, daysAgo: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, reason, occurred_at)
     VALUES ('resend', gen_random_uuid()::text, gen_random_uuid()::text, $1, 'delivered', $2, now() - make_interval(days => $3))`,
    [intentId, reason, daysAgo],
  );
}

async function message(intentId: string, text: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.email_messages (intent_id, subject, text_body, html_body, from_address, template, template_locale, locale, time_zone, template_version)
     VALUES ($1, 'Your slot', $2, '<p>hello</p>', 'support@example.com', 'reservation-expired', 'en', 'en', 'UTC', 'v1')`,
    [intentId, text],
  );
}

async function suppression(address: string, daysAgo: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.suppressions (address_hash, address, reason, created_at) VALUES ($1, $2, 'hard_bounce', now() - make_interval(days => $3))`,
    [addressHash(address), address, daysAgo],
  );
}

const count = async (table: string, where = 'true') =>
  (await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.${table} WHERE ${where}`)).rows[0].n as number;

describe('tables added by one entry each', () => {
  it('prune deletes a story with its message and events first; events of no intent by their own age; suppressions never', async () => {
    await writeStory(db.pool, db.schema, { id: 'old', status: 'expired', endedDaysAgo: 40, intent: 'sent', email: 'old@example.com' });
    await writeStory(db.pool, db.schema, { id: 'mid', status: 'expired', endedDaysAgo: 10, intent: 'sent', email: 'mid@example.com' });
    for (const id of ['old', 'mid']) {
      await message(`reservation-expired:${id}`, `hello ${id}`);
      await event(`reservation-expired:${id}`, null, 39);
    }
    await event(null, null, 40);
    await event(null, null, 10);
    await suppression('old@example.com', 400);
    // Two batches as old as the oldest story: the closed one ages out, the open one (still resendable) stays.
    for (const open of [false, true]) {
      await db.pool.query(
        `INSERT INTO ${s}.email_batches (id, account, provider, members, created_at, open)
         VALUES (gen_random_uuid(), 'default', 'resend', ARRAY['reservation-expired:old'], now() - interval '40 days', $1)`,
        [open],
      );
    }
    // Application webhooks: a finished one ages out on its own; a pending one, however old, and a recent one stay.
    await db.pool.query(
      `INSERT INTO ${s}.webhook_events (id, endpoint, type, payload, occurred_at, created_at, state, finished_at)
       VALUES ('msg_old_done', 'app', 'hold.expired', '{}', now(), now() - interval '40 days', 'delivered', now() - interval '40 days'),
              ('msg_old_pending', 'app', 'hold.expired', '{}', now(), now() - interval '40 days', 'pending', NULL),
              ('msg_new_dead', 'app', 'hold.expired', '{}', now(), now() - interval '1 day', 'dead', now())`,
    );

    const preview = await retentionPreview(db.pool, db.schema, { now: null, retentionDays: 30, erasePiiAfterDays: 7, tables: TABLES });
    const run = await new Pruner({ pool: db.pool, schema: db.schema, policy: DEFAULT_RETENTION, tables: TABLES }).runUntilDone();
    expect(run.pruned).toEqual({ email_attempts: 1, email_messages: 1, email_events: 2, email_batches: 1, webhook_events: 1, email_outbox: 1, support_reservations: 1 });
    // Events hold no address: erasure has nothing to change in them.
    expect(run.erased).toEqual({ email_attempts: 0, email_messages: 1, email_events: 0, email_outbox: 1, support_reservations: 1, suppressions: 1 });
    // The dry run counted the same (story events and standalone events share a table name).
    const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
    expect(nonZero(preview.prune)).toEqual(nonZero(run.pruned));
    expect(nonZero(preview.erase)).toEqual(nonZero(run.erased));

    expect(await count('email_messages')).toBe(0); // 'mid' erased: its rendered message deleted
    expect(await count('email_events')).toBe(2);
    expect(await count('email_batches')).toBe(1);
    expect(await count('webhook_events')).toBe(2);
    expect((await db.pool.query(`SELECT address, address_hash FROM ${s}.suppressions`)).rows).toEqual([
      { address: null, address_hash: addressHash('old@example.com') },
    ]);
    const oldest = await retentionOldest(db.pool, db.schema, TABLES);
    expect(Object.keys(oldest.oldestAgeSeconds).sort()).toEqual(['email_batches', 'email_events', 'support_reservations', 'suppressions', 'webhook_events']);
    expect(oldest.oldestAgeSeconds.suppressions).toBeGreaterThan(399 * 86_400);
  });

  it('erase --email reaches event reasons, messages and suppressions (the hash stays, so it stays suppressed)', async () => {
    await writeStory(db.pool, db.schema, { id: 'ana', status: 'expired', endedDaysAgo: 1, intent: 'sent', email: 'ana@example.com' });
    await message('reservation-expired:ana', 'for ana@example.com');
    await event('reservation-expired:ana', 'bounced by ana@example.com', 1);
    await event(null, 'unrelated', 1);
    await suppression('ana@example.com', 1);
    await suppression('bob@example.com', 1);

    const report = await eraseAddress(db.pool, 'Ana@Example.com', { schema: db.schema, tables: TABLES });
    expect(report.counts).toEqual({ email_attempts: 0, email_messages: 1, email_events: 1, email_outbox: 1, support_reservations: 1, suppressions: 1 });
    expect(await count('email_messages')).toBe(0);
    // An address that reached an event's reason is scrubbed as a second guard.
    expect((await db.pool.query(`SELECT reason FROM ${s}.email_events ORDER BY id`)).rows.map((r) => r.reason)).toEqual(['bounced by [erased]', 'unrelated']);
    expect((await db.pool.query(`SELECT address_hash, address FROM ${s}.suppressions ORDER BY address NULLS FIRST`)).rows).toEqual([
      { address_hash: addressHash('ana@example.com'), address: null },
      { address_hash: addressHash('bob@example.com'), address: 'bob@example.com' },
    ]);
  });
});
