import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { insertDueHolds } from '../helpers/holds.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('send_rate');
  await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix: 'rate' });
  await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
});
afterAll(() => h.close());

describe('GET /v1/status/sends', () => {
  it('counts finished attempts per second by outcome, at the second each started', async () => {
    const s = ident(h.db.schema);
    // Two started in the same second 5 s ago, one of them finishing 3 s later; one 20 s ago; one still in flight.
    const rows: Array<[string, number, number | null]> = [
      ['rate_limited', 5, 5],
      ['failed', 5, 2],
      ['failed', 20, 20],
      ['in flight', 1, null],
    ];
    let attempt = 0;
    const { rows: clock } = await h.db.pool.query<{ now: Date }>('SELECT date_trunc($1, now()) + interval $$0.5 seconds$$ AS now', ['second']);
    for (const [outcome, startedAgo, finishedAgo] of rows) {
      await h.db.pool.query(
        `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, duration_ms)
         VALUES ('reservation-expired:rate-0', $1, gen_random_uuid(), 'sandbox', $2::timestamptz - make_interval(secs => $3),
                 $2::timestamptz - make_interval(secs => $4), $5, 5)`,
        [++attempt, clock[0]!.now, startedAgo, finishedAgo, finishedAgo === null ? null : outcome],
      );
    }
    const res = await h.call('GET', '/v1/status/sends?seconds=10');
    expect(res.statusCode).toBe(200);
    const body = res.json() as { now: number; bins: Array<{ t: number; outcomes: Record<string, number> }> };
    expect(body.bins).toEqual([{ t: Math.floor(clock[0]!.now.getTime() / 1000) - 5, outcomes: { failed: 1, rate_limited: 1 } }]);
    expect(body.now).toBeGreaterThanOrEqual(body.bins[0]!.t + 5);
    const wide = (await h.call('GET', '/v1/status/sends')).json() as typeof body;
    expect(wide.bins.map((b) => b.outcomes)).toEqual([{ failed: 1 }, { failed: 1, rate_limited: 1 }]);
  });

  it('refuses a bad window with 400 naming it', async () => {
    for (const query of ['seconds=0', 'seconds=3601', 'seconds=1.5', 'seconds=x', 'other=1']) {
      const res = await h.call('GET', `/v1/status/sends?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.message, query).toMatch(/seconds|other/);
    }
    expect((await h.app.inject({ method: 'GET', url: '/v1/status/sends' })).statusCode).toBe(401);
  });
});
