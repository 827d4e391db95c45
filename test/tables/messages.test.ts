import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident, type Queryable } from '../../src/db/pool.js';
import { messagesStore } from '../../src/tables/messages.js';
import { intentsLease } from '../../src/tables/outbox.js';
import { shippedTemplates } from '../../src/templates/templates.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertSentStories } from '../helpers/holds.js';
import { planOf as planRecorded } from '../helpers/plans.js';

/**
 * What each delivery round reads and writes of messages must not grow with history:
 * with 50,000 sent intents and their stored messages, a batch of 50 is
 * reached by primary keys, not by scanning outbox, holds or messages.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tpl_indexes');
  const s = ident(db.schema);
  await insertSentStories(db.pool, db.schema, 50_000);
  await db.pool.query(
    `INSERT INTO ${s}.email_messages (intent_id, subject, text_body, html_body, from_address, headers, template, template_locale, locale, time_zone, template_version)
     SELECT id, 'Your reservation has expired', repeat('text ', 100), repeat('<p>html</p>', 100), 'a@example.com', '{}', 'reservation-expired', 'en', 'en', 'UTC', 'v'
       FROM ${s}.email_outbox`,
  );
  for (const table of ['support_reservations', 'email_outbox', 'email_messages']) await db.pool.query(`ANALYZE ${s}.${table}`);
});
afterAll(() => db.close());

const planOf = (call: (db: Queryable) => Promise<unknown>) => planRecorded(db.pool, call);

const ids = Array.from({ length: 50 }, (_, i) => `reservation-expired:old-${i * 997 + 1}`);

describe('message snapshot statements use primary keys', () => {
  it('the lease brings each snapshot (or the hold facts) by primary key, scanning nothing', async () => {
    const lease = { limit: 50, leaseMs: 30_000, token: '00000000-0000-4000-8000-000000000000', provider: 'test', now: null };
    const text = await planOf((q) => intentsLease(q, db.schema, lease));
    expect(text).not.toMatch(/Seq Scan on (email_outbox|support_reservations|email_messages)/);
    expect(text).toContain('email_messages_pkey');
    expect(text).toContain('support_reservations_pkey');
  });

  it('storing a batch scans nothing', async () => {
    const rendered = shippedTemplates().render('reservation-expired', {
      intentId: ids[0]!,
      holdId: 'old-1',
      metadata: {},
      expiresAt: new Date(),
      expiredAt: new Date(),
      from: 'a@example.com',
    });
    const text = await planOf((q) => messagesStore(q, db.schema, ids.map((intentId) => ({ ...rendered, intentId }))));
    expect(text).not.toMatch(/Seq Scan on email_messages/);
    expect(text).toContain('email_messages_pkey');
  });
});

describe('message bodies', () => {
  it('are compressed with lz4 where the server has it (migration 0035), with its default where not', async () => {
    const s = ident(db.schema);
    const intentId = ids[1]!;
    await db.pool.query(`DELETE FROM ${s}.email_messages WHERE intent_id = $1`, [intentId]);
    const rendered = shippedTemplates().render('reservation-expired', {
      intentId,
      holdId: 'old-998',
      metadata: {},
      expiresAt: new Date(),
      expiredAt: new Date(),
      from: 'a@example.com',
    });
    // An HTML part of 4 KB (the shipped one renders to about 1.3): past the 2 KB at which the server compresses a row's longest values.
    const html = rendered.html + '<!-- ' + 'padding '.repeat(400) + '-->';
    expect(await messagesStore(db.pool, db.schema, [{ ...rendered, html, intentId }])).toHaveLength(1);
    const { rows: [server] } = await db.pool.query<{ lz4: boolean }>(
      `SELECT coalesce(bool_or('lz4' = ANY (enumvals)), false) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`,
    );
    const { rows: [stored] } = await db.pool.query<{ html: string | null; fallback: string }>(
      `SELECT pg_column_compression(html_body) AS html, current_setting('default_toast_compression') AS fallback
         FROM ${s}.email_messages WHERE intent_id = $1`,
      [intentId],
    );
    expect(stored!.html).toBe(server!.lz4 ? 'lz4' : stored!.fallback);
  });
});
