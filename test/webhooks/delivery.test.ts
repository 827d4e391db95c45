import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { cancelHold, confirmHold, createHold, extendHold } from '../../src/holds/holds.js';
import { ingestEvents } from '../../src/events/ingest.js';
import { ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { intentsGet, intentsSweepDeadlines } from '../../src/tables/outbox.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEndpoint } from '../../src/model/webhook-events.js';
import { WebhookWorker } from '../../src/webhooks/worker.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { WebhookReceiver, webhookSecret } from '../helpers/webhook-receiver.js';

/**
 * Issue 41's second "done when": every event type driven to a local
 * receiver that verifies the signature, fails first attempts with 503 and
 * is down for the first seconds. Every event arrives, retries keep their
 * webhook-id, and email goes out on time while the receiver is down.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('webhooks_delivery');
});
afterAll(() => db.close());

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('signed webhooks, end to end', () => {
  it('delivers every event type, signed, through 503s and an outage, under one webhook-id each, and email never waits for it', async () => {
    const { pool, schema } = db;
    const s = ident(schema);
    const receiver = new WebhookReceiver(webhookSecret());
    // Take a port, then close it: the endpoint is down (connection refused) from the start.
    await receiver.up();
    await receiver.down();
    // The first attempt that reaches it of every event is a 503; every other one also says when to come back.
    let n = 0;
    receiver.answer = (_id, attempt) => (attempt === 1 ? { status: 503, ...(++n % 2 === 0 ? { headers: { 'retry-after': '1' } } : {}) } : { status: 204 });
    const endpoint: WebhookEndpoint = { name: 'app', url: receiver.url, secret: receiver.secret, rate: { perSecond: 1000, burst: 1000 }, concurrency: 3 };
    const webhooks = new WebhookWorker({
      pool,
      schema,
      endpoints: [endpoint],
      timeoutMs: 2000,
      intervalMs: 50,
      retryRule: { baseMs: 200, capMs: 800, maxRetryAfterMs: 2000 },
    });
    await webhooks.prepare();
    webhooks.start();
    try {
      // hold.expired x3
      const expiring = await insertDueHolds(pool, schema, 3, { prefix: 'wx' });
      expect((await new ExpiryWorker({ pool, schema }).runOnce()).expired).toHaveLength(3);
      // hold.confirmed, hold.cancelled, hold.extended
      for (const id of ['wc', 'wk', 'we']) await createHold(pool, { id, customerEmail: `${id}@example.com`, ttlSeconds: 600 }, { schema });
      await confirmHold(pool, 'wc', { schema });
      await cancelHold(pool, 'wk', { schema });
      await extendHold(pool, 'we', { ttlSeconds: 1200 }, { schema });

      // email.accepted x2 and email.rejected, sent while the endpoint is down.
      await rateLimiterSet(pool, schema, { perSecond: 1000, burst: 1000 });
      const gateway = new ScriptedGateway().script(`reservation-expired:${expiring[1]}`, { kind: 'rejected', reason: 'invalid recipient' });
      const emailStarted = Date.now();
      const run = await new DeliveryWorker({ pool, schema, gateway }).runOnce();
      expect(run).toMatchObject({ leased: 3, outcomes: { accepted: 2, rejected: 1 } });
      // On time: nothing reached the endpoint yet, and the round did not wait on it.
      expect(receiver.received).toHaveLength(0);
      expect(Date.now() - emailStarted).toBeLessThan(10_000);

      // email.missed_deadline: a reminder whose deadline passed unsent.
      await pool.query(
        `INSERT INTO ${s}.email_outbox (id, reservation_id, tenant, recipient, template, state, available_at, send_by)
         VALUES ('reservation-reminder:we', 'we', '', 'we@example.com', 'reservation-reminder', 'pending', now() + interval '1 hour', now() - interval '1 second')`,
      );
      expect(await intentsSweepDeadlines(pool, schema, null, 10)).toHaveLength(1);

      // email.bounced, email.complained
      const receipt = async (holdId: string) => (await intentsGet(pool, schema, `reservation-expired:${holdId}`))!.receipt!;
      await ingestEvents(pool, schema, [
        { provider: 'sandbox', providerEventId: 'b1', messageId: await receipt(expiring[0]!), kind: 'bounced', bounceType: 'hard', providerType: 'HardBounce', reason: null, occurredAt: new Date(), recipients: [] },
        { provider: 'sandbox', providerEventId: 'c1', messageId: await receipt(expiring[2]!), kind: 'complained', bounceType: null, providerType: null, reason: null, occurredAt: new Date(), recipients: [] },
      ]);

      const { rows: written } = await pool.query<{ id: string; type: string }>(`SELECT id, type FROM ${s}.webhook_events ORDER BY created_at, id`);
      expect(written).toHaveLength(12);
      expect(new Set(written.map((r) => r.type))).toEqual(new Set(WEBHOOK_EVENT_TYPES));

      // Down for the first seconds: the lane keeps trying (refused), then the endpoint comes up.
      await until('refused attempts', async () => {
        const { rows } = await pool.query(`SELECT 1 FROM ${s}.webhook_events WHERE last_error = 'connection refused'`);
        return rows.length >= 3;
      });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(receiver.received).toHaveLength(0);
      await receiver.up();

      await until('every event delivered', async () => {
        const { rows } = await pool.query(`SELECT 1 FROM ${s}.webhook_events WHERE state <> 'delivered'`);
        return rows.length === 0;
      });
    } finally {
      await webhooks.stop();
      await receiver.down();
    }

    const { rows } = await db.pool.query<{ id: string; type: string; attempts: number; hold_id: string }>(`SELECT id, type, attempts, hold_id FROM ${s}.webhook_events`);
    const delivered = receiver.delivered();
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect([...delivered.keys()].sort()).toEqual(rows.map((r) => r.id).sort());
    for (const row of rows) {
      const got = delivered.get(row.id)!;
      expect(got.body!.type).toBe(row.type);
      // Its first answered attempt was a 503; the retry came under the same webhook-id.
      expect(receiver.attemptsOf(row.id)).toBeGreaterThanOrEqual(2);
      // And every refused attempt before that was one of its attempts too.
      expect(row.attempts).toBeGreaterThanOrEqual(receiver.attemptsOf(row.id));
      expect(row.id).toMatch(/^msg_[0-9a-f]{32}$/);
    }
    // The body is {type, timestamp, data}; data names the hold and never an address.
    const expired = [...delivered.values()].find((r) => r.body!.type === 'hold.expired')!.body!;
    expect(Object.keys(expired).sort()).toEqual(['data', 'timestamp', 'type']);
    expect(expired.data).toMatchObject({ tenant: '', state: 'expired', holdId: expect.stringMatching(/^wx-/) });
    expect(expired.timestamp).toBe(expired.data['expiredAt']);
    const extended = [...delivered.values()].find((r) => r.body!.type === 'hold.extended')!.body!;
    expect(Date.parse(extended.data['expiresAt'] as string)).toBeGreaterThan(Date.parse(extended.data['previousExpiresAt'] as string));
    const bounced = [...delivered.values()].find((r) => r.body!.type === 'email.bounced')!.body!;
    expect(bounced.data).toMatchObject({ intentId: `reservation-expired:${bounced.data['holdId'] as string}`, kind: 'reservation-expired', outcome: 'bounced', bounceType: 'hard' });
    for (const r of delivered.values()) expect(JSON.stringify(r.body)).not.toContain('@');

    // The hold's timeline (GET /v1/holds/:id, trace) tells its webhooks.
    const timeline = await holdTimeline(db.pool, schema, 'wc');
    expect(timeline.webhooks).toMatchObject([{ type: 'hold.confirmed', endpoint: 'app', state: 'delivered' }]);
    expect(timeline.life.map((e) => e.what)).toContain('webhook hold.confirmed to app delivered');
    expect(formatTimeline(timeline).join('\n')).toMatch(/webhooks:\n {2}msg_\w+ {2}hold\.confirmed -> app: delivered after \d+ attempt\(s\), last HTTP 204/);
  });
});
