import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createPool, ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { insertDueHolds } from '../helpers/holds.js';
import { apiHarness, LogCapture, TOKEN, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('health', { LEASEHOLD_EXPIRY_PROMISE_S: '60', LEASEHOLD_EMAIL_PROMISE_S: '900' });
});
afterAll(() => h.close());

const health = async () => {
  const res = await h.app.inject({ method: 'GET', url: '/healthz' });
  return { status: res.statusCode, body: res.json() };
};

describe('/healthz', () => {
  it('200 ok on a quiet system', async () => {
    const { status, body } = await health();
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'ok', reasons: [] });
  });

  it('a due hold within the promise is fine; one past it turns 503, and expiring it recovers', async () => {
    await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix: 'recent', pastSeconds: 10 });
    expect((await health()).status).toBe(200);
    // Move time by backdating: a hold that fell due two hours ago and is still held.
    await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix: 'stuck', pastSeconds: 7200 });
    const broken = await health();
    expect(broken.status).toBe(503);
    expect(broken.body.status).toBe('unavailable');
    expect(broken.body.reasons).toEqual([{ code: 'expiry_promise_broken', message: expect.stringContaining('promise 60s') }]);
    expect(broken.body.expiry.oldestDueAgeSeconds).toBeGreaterThan(7000);
    expect(broken.body.expiry.dueHolds).toBe(2);

    await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
    // The two intents are fresh (created now), so both promises hold again.
    const recovered = await health();
    expect(recovered.status).toBe(200);
    expect(recovered.body.delivery.backlog).toBe(2);
  });

  it('a pending intent older than the email promise turns 503; finishing it recovers', async () => {
    const s = ident(h.db.schema);
    await h.db.pool.query(`UPDATE ${s}.email_outbox SET created_at = now() - interval '1 hour' WHERE reservation_id = 'stuck-0'`);
    const broken = await health();
    expect(broken.status).toBe(503);
    expect(broken.body.reasons.map((r: { code: string }) => r.code)).toEqual(['email_promise_broken']);
    expect(broken.body.delivery.oldestPendingAgeSeconds).toBeGreaterThan(3500);
    await h.db.pool.query(
      `UPDATE ${s}.email_outbox SET state = 'sent', sent_at = now(), finished_at = now(), receipt = 'r' WHERE reservation_id = 'stuck-0'`,
    );
    expect((await health()).status).toBe(200);
  });

  it('paused delivery is 503 with the reason; resuming recovers', async () => {
    await h.call('POST', '/v1/delivery/pause', { reason: 'quota exhausted until midnight' });
    const paused = await health();
    expect(paused.status).toBe(503);
    expect(paused.body.reasons).toEqual([{ code: 'delivery_paused', message: 'delivery is paused: quota exhausted until midnight' }]);
    await h.call('POST', '/v1/delivery/resume');
    expect((await health()).status).toBe(200);
  });
});

describe('a lane of this process that stopped finishing rounds', () => {
  it('turns /healthz 503 with lane_stalled naming the lane; a lane within its bound does not', async () => {
    const metrics = createMetrics();
    let deliveryAge = 2;
    metrics.watchLane('expiry', { age: () => 0.4, stalledAfterSeconds: 30 });
    metrics.watchLane('delivery', { age: () => deliveryAge, stalledAfterSeconds: 30 });
    const app = buildApp({ pool: h.db.pool, schema: h.db.schema, config: loadConfig({}), logger: createLogger({ level: 'silent' }), metrics, apiToken: TOKEN });
    try {
      const ok = await app.inject({ method: 'GET', url: '/healthz' });
      expect(ok.statusCode, ok.body).toBe(200);
      deliveryAge = 95;
      const stalled = await app.inject({ method: 'GET', url: '/healthz' });
      expect(stalled.statusCode).toBe(503);
      expect(stalled.json().reasons).toEqual([
        { code: 'lane_stalled', message: 'the delivery lane of this process has not finished a round for 95s (stalled after 30s)' },
      ]);
      // The same age for Prometheus, by lane.
      const text = await (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text).toContain('leasehold_loop_last_round_age_seconds{lane="delivery"} 95');
      expect(text).toContain('leasehold_loop_last_round_age_seconds{lane="expiry"} 0.4');
    } finally {
      await app.close();
    }
  });
});

describe('database unreachable', () => {
  it("/healthz (open to anyone) gives a stable code and no address; the cause goes to the logs", async () => {
    const pool = createPool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    const logs = new LogCapture();
    const app = buildApp({
      pool,
      schema: 'leasehold',
      config: loadConfig({}),
      logger: createLogger({ level: 'info', destination: logs }),
      metrics: createMetrics(),
      apiToken: TOKEN,
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/healthz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        status: 'unavailable',
        reasons: [{ code: 'database_unreachable', message: 'the database is unreachable or did not answer in time' }],
      });
      expect(res.body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|nobody/);
      const logged = logs.events().find((e) => e.event === 'health.database_unreachable');
      expect(JSON.stringify(logged)).toContain('ECONNREFUSED');
    } finally {
      await app.close();
      await pool.end();
    }
  });


  it('/healthz says so with 503, /v1 answers 503 database_unavailable, /metrics reports database_up 0', async () => {
    const pool = createPool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    const app = buildApp({
      pool,
      schema: 'leasehold',
      config: loadConfig({}),
      logger: createLogger({ level: 'silent' }),
      metrics: createMetrics(),
      apiToken: TOKEN,
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/healthz' });
      expect(res.statusCode).toBe(503);
      expect(res.json().reasons[0].code).toBe('database_unreachable');
      const v1 = await app.inject({ method: 'GET', url: '/v1/intents', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(v1.statusCode).toBe(503);
      expect(v1.json().error.code).toBe('database_unavailable');
      const metrics = await app.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body).toMatch(/^leasehold_database_up 0$/m);
      expect(metrics.body).toMatch(/^leasehold_email_backlog nan$/im);
    } finally {
      await app.close();
      await pool.end();
    }
  });
});
