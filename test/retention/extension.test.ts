import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { addressHash, DEFAULT_RETENTION, RETENTION_TABLES, type RetentionTables } from '../../src/retention/policy.js';
import { Pruner } from '../../src/retention/prune.js';
import { retentionOldest, retentionPreview } from '../../src/retention/queries.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { writeStory } from './stories.js';

/**
 * Tables other branches add (migrations 0006 and 0008) are reached by adding
 * entries to the lists in src/retention/policy.ts, nothing else. Here the
 * entries documented there run against stand-ins shaped like those tables.
 */
const PLANNED: RetentionTables = {
  storyChildren: [
    ...RETENTION_TABLES.storyChildren,
    { table: 'email_messages', erase: 'delete' },
    { table: 'email_events', erase: { recipient: 'null' }, addressColumns: ['recipient'] },
  ],
  standalone: [
    { table: 'email_events', key: 'id', age: 'occurred_at', applies: 't.intent_id IS NULL', prune: true, erase: { recipient: 'null' }, addressColumns: ['recipient'] },
    { table: 'suppressions', key: 'address_hash', age: 'created_at', applies: 'true', prune: false, erase: { address: 'null' },
      addressColumns: ['address'], addressHashColumn: 'address_hash' },
  ],
};

let db: TestDatabase;
let s: string;
beforeEach(async () => {
  db = await testDatabase('retention_ext');
  s = ident(db.schema);
  await db.pool.query(`
    CREATE TABLE ${s}.email_messages (
      intent_id text PRIMARY KEY REFERENCES ${s}.email_outbox (id),
      subject text NOT NULL, text_body text NOT NULL, html text NOT NULL);
    CREATE TABLE ${s}.email_events (
      id bigserial PRIMARY KEY, provider text NOT NULL, provider_event_id text NOT NULL, message_id text,
      intent_id text REFERENCES ${s}.email_outbox (id), kind text NOT NULL, recipient text, occurred_at timestamptz NOT NULL);
    CREATE TABLE ${s}.suppressions (
      address_hash text PRIMARY KEY, address text, reason text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`);
});
afterEach(() => db.close());

async function event(intentId: string | null, recipient: string | null, daysAgo: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.email_events (provider, provider_event_id, intent_id, kind, recipient, occurred_at)
     VALUES ('resend', gen_random_uuid()::text, $1, 'delivered', $2, now() - make_interval(days => $3))`,
    [intentId, recipient, daysAgo],
  );
}

async function suppression(address: string, daysAgo: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.suppressions (address_hash, address, reason, created_at) VALUES ($1, $2, 'bounced', now() - make_interval(days => $3))`,
    [addressHash(address), address, daysAgo],
  );
}

const count = async (table: string, where = 'true') =>
  (await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.${table} WHERE ${where}`)).rows[0].n as number;

describe('tables added by one entry each', () => {
  it('prune deletes a story with its messages and events first; standalone events by their own age; suppressions never', async () => {
    await writeStory(db.pool, db.schema, { id: 'old', status: 'expired', endedDaysAgo: 40, intent: 'sent', email: 'old@example.com' });
    await writeStory(db.pool, db.schema, { id: 'mid', status: 'expired', endedDaysAgo: 10, intent: 'sent', email: 'mid@example.com' });
    for (const id of ['old', 'mid']) {
      await db.pool.query(`INSERT INTO ${s}.email_messages VALUES ($1, 'Your slot', 'hello ' || $2, '<p>hello</p>')`, [`reservation-expired:${id}`, `${id}@example.com`]);
      await event(`reservation-expired:${id}`, `${id}@example.com`, 39);
    }
    await event(null, 'stray-old@example.com', 40);
    await event(null, 'stray-mid@example.com', 10);
    await suppression('old@example.com', 400);

    const preview = await retentionPreview(db.pool, db.schema, { now: null, retentionDays: 30, erasePiiAfterDays: 7, tables: PLANNED });
    const run = await new Pruner({ pool: db.pool, schema: db.schema, policy: DEFAULT_RETENTION, tables: PLANNED }).runUntilDone();
    expect(run.pruned).toEqual({ email_attempts: 1, email_messages: 1, email_events: 2, email_outbox: 1, support_reservations: 1 });
    expect(run.erased).toEqual({ email_attempts: 0, email_messages: 1, email_events: 2, email_outbox: 1, support_reservations: 1, suppressions: 1 });
    // The dry run counted the same (story events and standalone events share a table name).
    const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
    expect(nonZero(preview.prune)).toEqual(nonZero(run.pruned));
    expect(nonZero(preview.erase)).toEqual(nonZero(run.erased));

    expect(await count('email_messages')).toBe(0); // 'mid' erased: its rendered message deleted
    expect(await count('email_events')).toBe(2);
    expect(await count('email_events', 'recipient IS NOT NULL')).toBe(0);
    expect((await db.pool.query(`SELECT address, address_hash FROM ${s}.suppressions`)).rows).toEqual([
      { address: null, address_hash: addressHash('old@example.com') },
    ]);
    const oldest = await retentionOldest(db.pool, db.schema, PLANNED);
    expect(Object.keys(oldest.oldestAgeSeconds).sort()).toEqual(['email_events', 'support_reservations', 'suppressions']);
    expect(oldest.oldestAgeSeconds.suppressions).toBeGreaterThan(399 * 86_400);
  });

  it('erase --email reaches events (with or without an intent), messages and suppressions (the hash stays, so it stays suppressed)', async () => {
    await writeStory(db.pool, db.schema, { id: 'ana', status: 'expired', endedDaysAgo: 1, intent: 'sent', email: 'ana@example.com' });
    await db.pool.query(`INSERT INTO ${s}.email_messages VALUES ('reservation-expired:ana', 'Hi', 'for ana@example.com', '<p>x</p>')`);
    await event('reservation-expired:ana', 'ana@example.com', 1);
    await event(null, 'ANA@example.com', 1);
    await event(null, 'bob@example.com', 1);
    await suppression('ana@example.com', 1);
    await suppression('bob@example.com', 1);

    const report = await eraseAddress(db.pool, 'Ana@Example.com', { schema: db.schema, tables: PLANNED });
    expect(report.counts).toEqual({ email_attempts: 0, email_messages: 1, email_events: 2, email_outbox: 1, support_reservations: 1, suppressions: 1 });
    expect(await count('email_messages')).toBe(0);
    expect((await db.pool.query(`SELECT recipient FROM ${s}.email_events ORDER BY id`)).rows.map((r) => r.recipient)).toEqual([null, null, 'bob@example.com']);
    expect((await db.pool.query(`SELECT address_hash, address FROM ${s}.suppressions ORDER BY address NULLS FIRST`)).rows).toEqual([
      { address_hash: addressHash('ana@example.com'), address: null },
      { address_hash: addressHash('bob@example.com'), address: 'bob@example.com' },
    ]);
  });
});
