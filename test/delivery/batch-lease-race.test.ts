import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident, withClient } from '../../src/db/pool.js';
import { DEFAULTS } from '../../src/defaults.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { prepareMessages } from '../../src/delivery/messages.js';
import { planRequests } from '../../src/delivery/requests.js';
import { sendRequest } from '../../src/delivery/send.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { Faults } from '../../src/runtime/faults.js';
import { intentsLease, intentsRecord, type LeasedIntent } from '../../src/tables/outbox.js';
import { shippedTemplates } from '../../src/templates/templates.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { expireHolds } from '../helpers/provider-e2e.js';
import { resolveAccounts } from '../../src/delivery/accounts.js';

/**
 * A new batch begun by a worker whose lease was just taken from it (expired,
 * or reclaimed after its session blinked in a database restart) while
 * another worker's lease of the same intents is in flight. The chaos drill
 * once delivered 52 emails twice this way, half of them unflagged: the
 * first worker bound the members the second had leased, sent them under
 * the batch's key, and the second sent them again under their own.
 */
let db: TestDatabase;
let resend: FakeResend;
beforeAll(async () => {
  db = await testDatabase('batch_lease_race');
  resend = new FakeResend();
  await resend.start();
});
afterAll(async () => {
  await db.close();
  await resend.stop();
});

/** Resolves once a backend of this database waits on a lock in a statement whose text has `table` (in its first 1,024 bytes). */
async function waitingOn(table: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [`%${table}%`],
    );
    if (rows[0]!.n > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  const { rows } = await db.pool.query(`SELECT left(query, 200) AS q, wait_event_type FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  throw new Error(`no statement on ${table} waited for a lock: ${JSON.stringify(rows)}`);
}

describe('a batch begun as another worker leases its members', () => {
  it('the worker whose lease was taken sends nothing; the other sends each email once, unflagged', async () => {
    const s = ident(db.schema);
    const gateway = new ResendGateway({ apiKey: resend.apiKey, baseUrl: resend.url });
    const ids = await expireHolds(db, 'race', 3);
    const templates = shippedTemplates();
    // Their messages rendered and stored already (an earlier round given
    // back unsent), so A's round writes nothing before its batch.
    const first = await intentsLease(db.pool, db.schema, { limit: 100, leaseMs: 30_000, token: randomUUID(), provider: 'resend', now: null });
    await prepareMessages(db.pool, db.schema, templates, first, { from: DEFAULTS.emailFrom, now: new Date() });
    await db.pool.query(`DELETE FROM ${s}.email_attempts WHERE intent_id = ANY ($1)`, [ids]);
    await db.pool.query(`UPDATE ${s}.email_outbox SET lease_token = NULL, lease_expires_at = NULL, attempts = 0 WHERE id = ANY ($1)`, [ids]);
    let bLeased: LeasedIntent[] = [];
    const bToken = randomUUID();
    // Worker B's session, checked out with an error listener (withClient).
    await withClient(db.pool, async (b) => {
      let committed: Promise<void> = Promise.resolve();
      // Worker A: leases the three; then, before it begins its batch, its
      // lease is taken (as a reclaim does) and worker B's lease of them is in
      // flight, committing only once A's batch statement waits for its rows.
      const faults = new Faults(async (point) => {
        if (point === 'delivery.leased') {
          await db.pool.query(`UPDATE ${s}.email_outbox SET lease_expires_at = now() - interval '1 ms' WHERE id = ANY ($1)`, [ids]);
          await b.query('BEGIN');
          bLeased = await intentsLease(b, db.schema, { limit: 100, leaseMs: 30_000, token: bToken, provider: 'resend', now: null });
          committed = waitingOn('email_batches').then(async () => void (await b.query('COMMIT')));
        }
        // Were A to send (it must not), it would die before its record.
        if (point === 'delivery.accepted') throw new Error('worker A killed before its record');
      });
      const a = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, sendTimeoutMs: 5000, leaseMs: 30_000, random: () => 0.5, faults });
      // A's batch statement waits for B's lease, then finds the members
      // B's: A binds none, sends nothing and records nothing.
      const run = await a.runOnce();
      expect(run.outcomes).toEqual({});
      await committed;
      expect(resend.deliveries).toHaveLength(0);
    });
    expect(bLeased.map((i) => i.id).sort()).toEqual([...ids].sort());

    // Worker B sends what it leased, as its round would, and records it.
    const messages = await prepareMessages(db.pool, db.schema, templates, bLeased, { from: DEFAULTS.emailFrom, now: new Date() });
    const setting = {
      pool: db.pool,
      schema: db.schema,
      token: bToken,
      sendTimeoutMs: 5000,
      signal: AbortSignal.timeout(5000),
      failover: ['default'],
      retryPolicy: undefined,
      random: () => 0.5,
      faults: new Faults(),
    };
    const account = resolveAccounts({ gateway, from: DEFAULTS.emailFrom }).byName.get('default')!;
    const results = [];
    for (const request of planRequests(bLeased, { batch: 100, keyed: true })) {
      results.push(...(await sendRequest(request, account, messages, setting)));
    }
    await intentsRecord(db.pool, db.schema, results, { maxAttempts: 10, now: null });

    const { rows } = await db.pool.query<{ id: string; state: string; possible_duplicate: boolean }>(
      `SELECT id, state, possible_duplicate FROM ${s}.email_outbox WHERE id = ANY ($1) ORDER BY id`,
      [ids],
    );
    expect(rows.every((r) => r.state === 'sent')).toBe(true);
    for (const row of rows) {
      const deliveries = resend.deliveries.filter((d) => d.headers['X-Leasehold-Intent-Id'] === row.id);
      expect({ id: row.id, deliveries: deliveries.length, flagged: row.possible_duplicate }).toEqual({ id: row.id, deliveries: 1, flagged: false });
    }
  });
});
