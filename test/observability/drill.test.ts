import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * The operations drill (docs/operations.md), through the operator surfaces:
 * pause delivery over the API, let intents pile up past one hold window,
 * resume, and watch the oldest age recover through /healthz and /metrics,
 * with no window of sends above burst + perSecond * t.
 */

const PER_SECOND = 40;
const BURST = 5;
const HOLDS = 60;

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('drill', { LEASEHOLD_EMAIL_PROMISE_S: '60', LEASEHOLD_EXPIRY_PROMISE_S: '60' });
});
afterAll(() => h.close());

const healthz = async () => {
  const res = await h.app.inject({ method: 'GET', url: '/healthz' });
  return { status: res.statusCode, body: res.json() };
};
const gauge = async (name: string) => {
  const scrape = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = scrape.split('\n').find((l) => l.startsWith(`${name} `))!;
  return Number(line.slice(name.length + 1));
};

describe('drill: pause, pile up past one hold window, resume', () => {
  it('expiry stays on time, the backlog drains within the limit, and the oldest age recovers', async () => {
    const { pool, schema } = h.db;
    const s = ident(schema);
    expect((await h.call('PUT', '/v1/rate-limit', { perSecond: PER_SECOND, burst: BURST })).statusCode).toBe(200);
    expect((await h.call('POST', '/v1/delivery/pause', { reason: 'drill' })).statusCode).toBe(200);

    for (let i = 0; i < HOLDS; i++) {
      await h.call('POST', '/v1/holds', { id: `drill-${i}`, customerEmail: `drill+${i}@example.com`, ttlSeconds: 30 });
    }
    // One hold window (30 s) and more passes: move time by backdating the holds.
    await pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '1 second' WHERE status = 'held'`);
    const expiry = new ExpiryWorker({ pool, schema });
    while ((await expiry.runOnce()).expired.length > 0);
    const gateway = new SandboxGateway();
    const delivery = new DeliveryWorker({ pool, schema, gateway, concurrency: 8, batchSize: 8 });
    expect(await delivery.runOnce()).toMatchObject({ leased: 0, blocked: 'paused' });
    // The intents have waited two minutes, past the 60 s email promise.
    await pool.query(`UPDATE ${s}.email_outbox SET created_at = created_at - interval '2 minutes'`);

    const paused = await healthz();
    expect(paused.status).toBe(503);
    expect(paused.body.reasons.map((r: { code: string }) => r.code).sort()).toEqual(['delivery_paused', 'email_promise_broken']);
    expect(await gauge('leasehold_due_holds')).toBe(0);
    expect(await gauge('leasehold_email_backlog')).toBe(HOLDS);
    expect(await gauge('leasehold_oldest_pending_intent_age_seconds')).toBeGreaterThan(60);
    expect(gateway.accepted).toHaveLength(0);

    expect((await h.call('POST', '/v1/delivery/resume')).statusCode).toBe(200);
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      const run = await delivery.runOnce();
      if (run.leased === 0) {
        if ((await gauge('leasehold_email_backlog')) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, Math.min(run.retryInMs ?? 20, 50)));
      }
    }

    expect(await gauge('leasehold_email_backlog')).toBe(0);
    expect(await gauge('leasehold_oldest_pending_intent_age_seconds')).toBe(0);
    expect((await healthz()).status).toBe(200);
    expect(gateway.accepted).toHaveLength(HOLDS);

    // No window of sends above the policy: for the k sends from i to j,
    // k <= burst + perSecond * (t_j - t_i), by the database clock.
    const { rows } = await pool.query<{ t: number }>(
      `SELECT extract(epoch FROM started_at)::float8 AS t FROM ${s}.email_attempts WHERE outcome = 'accepted' ORDER BY started_at`,
    );
    const times = rows.map((r) => r.t);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        // One permit of slack: started_at is stamped just after the permit was taken.
        expect(j - i + 1, `sends ${i}..${j}`).toBeLessThanOrEqual(BURST + PER_SECOND * (times[j]! - times[i]!) + 1);
      }
    }
    // It drained at the limit, not all at once: about (HOLDS - BURST) / PER_SECOND seconds.
    expect(times.at(-1)! - times[0]!).toBeGreaterThan(((HOLDS - BURST) / PER_SECOND) * 0.8);
  });
});
