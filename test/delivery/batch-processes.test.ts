import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { waitForSent, worstWindowExcess } from '../helpers/fleet.js';
import { expireHolds } from '../helpers/provider-e2e.js';
import { fixture, kill9, startNode, type Child } from '../helpers/processes.js';

/**
 * Batches across real processes: a worker SIGKILLed after Resend accepted
 * its batch and before it recorded it, and the limiter's bound, in
 * requests and in emails, held by three processes together.
 */
let db: TestDatabase;
let resend: FakeResend;
beforeAll(async () => {
  db = await testDatabase('batch_procs');
  resend = new FakeResend();
  await resend.start();
});
afterAll(async () => {
  await db.close();
  await resend.stop();
});

const intentOf = (d: { headers: Record<string, string> }) => d.headers['X-Leasehold-Intent-Id']!;

describe('batches across processes', () => {
  it('a batch accepted by a worker SIGKILLed before it records is resent with the same key and body, and delivered once', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
    const ids = await expireHolds(db, 'bkill', 12);
    const env = { ...db.env, EMAIL_PROVIDER: 'resend', RESEND_API_KEY: resend.apiKey, RESEND_BASE_URL: resend.url };
    const child = startNode(fixture('delivery-child'), ['--crash-at', 'delivery.accepted'], env);
    try {
      await child.waitForLine(/^FAULT delivery\.accepted/);
    } finally {
      await kill9(child);
    }
    // Resend has every email once; leasehold has recorded none of it.
    expect(resend.deliveries.map(intentOf).sort()).toEqual([...ids].sort());
    const { rows: pending } = await db.pool.query<{ batch_id: string | null }>(
      `SELECT batch_id FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) AND state = 'pending'`,
      [ids],
    );
    expect(pending).toHaveLength(12);
    expect(new Set(pending.map((r) => r.batch_id)).size).toBe(1);
    // The dead worker's lease runs out (tests move time: backdated).
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET lease_expires_at = now() - interval '1 ms' WHERE lease_token IS NOT NULL`);

    const w = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: new ResendGateway({ apiKey: resend.apiKey, baseUrl: resend.url }) });
    expect((await w.runOnce()).outcomes).toEqual({ accepted: 12 });

    const sends = resend.requests.filter((r) => r.path === '/emails/batch');
    expect(sends).toHaveLength(2);
    expect(sends[1]!.headers['idempotency-key']).toBe(sends[0]!.headers['idempotency-key']);
    expect(JSON.stringify(sends[1]!.body)).toBe(JSON.stringify(sends[0]!.body));
    expect(resend.deliveries.map(intentOf).sort()).toEqual([...ids].sort()); // still once each
    const { rows } = await db.pool.query<{ state: string; possible_duplicate: boolean; receipt: string }>(
      `SELECT state, possible_duplicate, receipt FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1)`,
      [ids],
    );
    expect(rows.every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    expect(new Set(rows.map((r) => r.receipt))).toEqual(new Set(resend.deliveries.map((d) => d.id)));
  }, 60_000);

  it('three processes keep one account to its rate in requests and another to its rate in emails', async () => {
    const LIMITS = { requests: { perSecond: 4, burst: 2 }, emails: { perSecond: 60, burst: 10 } };
    const dir = await mkdtemp(path.join(tmpdir(), 'lh-batch-'));
    const file = path.join(dir, 'accounts.yaml');
    const settings = `apiKey: "\${RESEND_KEY}", baseUrl: "${resend.url}"`;
    await writeFile(
      file,
      [
        'accounts:',
        `  - { name: requests, provider: resend, batch: 10, rate: { perSecond: ${LIMITS.requests.perSecond}, burst: ${LIMITS.requests.burst}, unit: requests }, ${settings} }`,
        `  - { name: emails, provider: resend, batch: 10, rate: { perSecond: ${LIMITS.emails.perSecond}, burst: ${LIMITS.emails.burst}, unit: emails }, ${settings} }`,
        'failover: [requests, emails]',
      ].join('\n'),
    );
    for (const [name, policy] of Object.entries(LIMITS)) await rateLimiterSet(db.pool, db.schema, policy, null, name);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now() WHERE state = 'pending'`);
    const before = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE state = 'sent'`);
    const ids = await expireHolds(db, 'bunits', 240);
    const onEmails = ids.filter((_, i) => i % 2 === 1);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET account = 'emails' WHERE id = ANY ($1)`, [onEmails]);
    await new Promise((r) => setTimeout(r, 250)); // both buckets fill to their burst

    const env = { ...db.env, LEASEHOLD_ACCOUNTS_FILE: file, RESEND_KEY: resend.apiKey };
    const children: Child[] = [0, 1, 2].map(() => startNode(fixture('delivery-child'), ['--loop', '--concurrency', '4', '--batch', '10'], env));
    try {
      await Promise.all(children.map((c) => c.waitForLine(/^READY/)));
      await waitForSent(db.pool, db.schema, before.rows[0]!.n + 240, 45_000);
    } finally {
      for (const child of children) child.process.kill('SIGTERM');
      await Promise.all(children.map((c) => c.exited));
    }

    // One time per provider request (its members share their permit's time) on the requests account ...
    const { rows: requests } = await db.pool.query<{ t: number; n: number }>(
      `SELECT extract(epoch FROM min(started_at))::float8 AS t, count(*)::int AS n FROM ${ident(db.schema)}.email_attempts
        WHERE outcome = 'accepted' AND account = 'requests' AND intent_id = ANY ($1)
        GROUP BY coalesce(batch_id::text, intent_id) ORDER BY 1`,
      [ids],
    );
    // ... and one per email on the emails account.
    const { rows: emails } = await db.pool.query<{ t: number }>(
      `SELECT extract(epoch FROM started_at)::float8 AS t FROM ${ident(db.schema)}.email_attempts
        WHERE outcome = 'accepted' AND account = 'emails' AND intent_id = ANY ($1) ORDER BY 1`,
      [ids],
    );
    expect(requests.reduce((n, r) => n + r.n, 0)).toBe(120);
    expect(emails).toHaveLength(120);
    // Batches really carried several emails: far fewer requests than emails.
    expect(requests.length).toBeLessThanOrEqual(24);
    expect(worstWindowExcess(requests.map((r) => r.t), LIMITS.requests.perSecond, LIMITS.requests.burst)).toBeLessThanOrEqual(0);
    expect(worstWindowExcess(emails.map((r) => r.t), LIMITS.emails.perSecond, LIMITS.emails.burst)).toBeLessThanOrEqual(0);
    // The units differ: the emails account sent its emails faster than the requests account's bound would allow emails.
    expect(worstWindowExcess(emails.map((r) => r.t), LIMITS.requests.perSecond, LIMITS.requests.burst)).toBeGreaterThan(0);
  }, 90_000);
});
