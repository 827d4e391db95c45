import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { rateLimiterEnsure, rateLimiterPause } from '../../src/tables/rate-limiter.js';
import { insertDueHolds } from '../helpers/holds.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_intents');
  // Five expired holds, each with its pending intent, created one by one so
  // their created_at order is known.
  for (let i = 0; i < 5; i++) {
    await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix: `i${i}` });
    await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
  }
  await h.db.pool.query(
    `UPDATE ${ident(h.db.schema)}.email_outbox SET state = 'dead', finished_at = now(), attempts = 10, failed_attempts = 10
      WHERE id = 'reservation-expired:i0-0'`,
  );
});
afterAll(() => h.close());

describe('GET /v1/intents', () => {
  it('lists newest first and pages with the cursor to the end', async () => {
    const first = (await h.call('GET', '/v1/intents?limit=2')).json();
    expect(first.intents.map((i: { id: string }) => i.id)).toEqual(['reservation-expired:i4-0', 'reservation-expired:i3-0']);
    expect(first.intents[0]).not.toHaveProperty('recipient');
    const second = (await h.call('GET', `/v1/intents?limit=2&cursor=${first.nextCursor}`)).json();
    expect(second.intents.map((i: { id: string }) => i.id)).toEqual(['reservation-expired:i2-0', 'reservation-expired:i1-0']);
    const third = (await h.call('GET', `/v1/intents?limit=2&cursor=${second.nextCursor}`)).json();
    expect(third.intents.map((i: { id: string }) => i.id)).toEqual(['reservation-expired:i0-0']);
    expect(third.nextCursor).toBeNull();
  });

  it('filters by state', async () => {
    const dead = (await h.call('GET', '/v1/intents?state=dead')).json();
    expect(dead.intents.map((i: { id: string }) => i.id)).toEqual(['reservation-expired:i0-0']);
    expect((await h.call('GET', '/v1/intents?state=pending')).json().intents).toHaveLength(4);
  });

  it.each([
    ['state=leased', 'state'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=2.5', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=garbage', 'cursor'],
    ['state=sent&state=dead', 'state'],
    ['colour=red', 'colour'],
  ])('400 for ?%s naming %s', async (query, field) => {
    const res = await h.call('GET', `/v1/intents?${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
  });
});

describe('GET /v1/intents/:id and replay', () => {
  it('shows an intent with its attempts; 404 unknown; 400 odd characters', async () => {
    const res = await h.call('GET', '/v1/intents/reservation-expired:i1-0');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: 'reservation-expired:i1-0', holdId: 'i1-0', state: 'pending', attempts: [] });
    expect((await h.call('GET', '/v1/intents/reservation-expired:nope')).statusCode).toBe(404);
    const odd = await h.call('GET', '/v1/intents/%3Cscript%3E');
    expect(odd.statusCode).toBe(400);
    expect(odd.json().error.field).toBe('id');
  });

  it('replays a finished intent without touching the hold; 409 while pending; 404 unknown', async () => {
    const replayed = await h.call('POST', '/v1/intents/reservation-expired:i0-0/replay');
    expect(replayed.statusCode).toBe(200);
    expect(replayed.json()).toMatchObject({ state: 'pending', replays: 1, failedAttempts: 0 });
    expect((await h.call('GET', '/v1/holds/i0-0')).json().hold.status).toBe('expired');
    const again = await h.call('POST', '/v1/intents/reservation-expired:i0-0/replay');
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatchObject({ code: 'intent_state', state: 'pending' });
    expect((await h.call('POST', '/v1/intents/reservation-expired:ghost/replay')).statusCode).toBe(404);
    const event = h.logs.events().find((e) => e.event === 'intent.replayed');
    expect(event).toMatchObject({ intentId: 'reservation-expired:i0-0', holdId: 'i0-0' });
  });
});

describe('delivery controls', () => {
  it('pause with a reason, pause without one, resume; each logged once', async () => {
    const paused = await h.call('POST', '/v1/delivery/pause', { reason: 'provider incident' });
    expect(paused.statusCode).toBe(200);
    expect(paused.json()).toMatchObject({ paused: true, reason: 'provider incident', pausedBy: 'operator' });
    expect((await h.call('GET', '/v1/delivery')).json()).toMatchObject({ paused: true });
    const bare = await h.call('POST', '/v1/delivery/pause');
    expect(bare.json()).toMatchObject({ paused: true, reason: 'paused by an operator' });
    const resumed = await h.call('POST', '/v1/delivery/resume');
    expect(resumed.statusCode).toBe(200);
    expect(resumed.json()).toMatchObject({ paused: false, reason: null });
    const events = h.logs.events().map((e) => e.event);
    expect(events.filter((e) => e === 'delivery.paused')).toHaveLength(2);
    expect(events.filter((e) => e === 'delivery.resumed')).toHaveLength(1);
  });

  it("a provider's pause of the one account shows on /v1/delivery and /healthz, and resume lifts it", async () => {
    await rateLimiterEnsure(h.db.pool, h.db.schema, { perSecond: 10, burst: 10 });
    await rateLimiterPause(h.db.pool, h.db.schema, 'default', { reason: 'Resend refused the API key', by: 'resend' });
    expect((await h.call('GET', '/v1/delivery')).json()).toMatchObject({ paused: false, pausedAccounts: ['default'] });
    const health = await h.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(503);
    expect(health.json().reasons).toContainEqual({
      code: 'delivery_paused',
      message: 'delivery is paused: Resend refused the API key (account default, paused by resend)',
    });
    const resumed = await h.call('POST', '/v1/delivery/resume');
    expect(resumed.json()).toMatchObject({ paused: false, pausedAccounts: [] });
    expect((await h.app.inject({ method: 'GET', url: '/healthz' })).json().reasons.map((r: { code: string }) => r.code)).not.toContain('delivery_paused');
  });

  it('400 for a bad pause body', async () => {
    for (const [body, field] of [
      [{ reason: '' }, 'reason'],
      [{ reason: 42 }, 'reason'],
      [{ reason: 'x'.repeat(501) }, 'reason'],
      [{ why: 'x' }, 'why'],
      [[], 'body'],
    ] as const) {
      const res = await h.call('POST', '/v1/delivery/pause', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.field).toBe(field);
    }
  });

  it('rate limit: GET shows the configured initial policy, PUT persists a new one', async () => {
    const initial = await h.call('GET', '/v1/rate-limit');
    expect(initial.statusCode).toBe(200);
    expect(initial.json()).toMatchObject({ perSecond: 10, burst: 10 });
    const put = await h.call('PUT', '/v1/rate-limit', { perSecond: 2.5, burst: 4 });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ perSecond: 2.5, burst: 4 });
    expect((await h.call('GET', '/v1/rate-limit')).json()).toMatchObject({ perSecond: 2.5, burst: 4 });
    expect(h.logs.events().find((e) => e.event === 'rate_limit.changed')).toMatchObject({ perSecond: 2.5, burst: 4 });
  });

  it('PUT /v1/rate-limit with one half keeps the other, as the CLI flags do', async () => {
    await h.call('PUT', '/v1/rate-limit', { perSecond: 3, burst: 7 });
    expect((await h.call('PUT', '/v1/rate-limit', { perSecond: 5 })).json()).toMatchObject({ perSecond: 5, burst: 7 });
    expect((await h.call('PUT', '/v1/rate-limit', { burst: 2 })).json()).toMatchObject({ perSecond: 5, burst: 2 });
  });

  it('a pause for a number of seconds lifts itself, like the CLI\'s --for', async () => {
    const res = await h.call('POST', '/v1/delivery/pause', { reason: 'short', forSeconds: 60 });
    expect(res.statusCode).toBe(200);
    const until = new Date(res.json().pausedUntil).getTime();
    expect(until - Date.now()).toBeGreaterThan(50_000);
    expect(until - Date.now()).toBeLessThanOrEqual(61_000);
    // Read as of just before and just after its end, with no writer lifting it.
    expect((await deliveryControlGet(h.db.pool, h.db.schema, new Date(until - 1000))).paused).toBe(true);
    expect((await deliveryControlGet(h.db.pool, h.db.schema, new Date(until + 1))).paused).toBe(false);
    for (const forSeconds of [0, -1, 'soon', 4e7]) {
      const bad = await h.call('POST', '/v1/delivery/pause', { forSeconds });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.field).toBe('forSeconds');
    }
    await h.call('POST', '/v1/delivery/resume');
  });

  it.each([
    [{ perSecond: 0, burst: 1 }, 'perSecond'],
    [{ perSecond: -1, burst: 1 }, 'perSecond'],
    [{ perSecond: 1, burst: 1.5 }, 'burst'],
    [{ perSecond: 1, burst: 0 }, 'burst'],
    [{ perSecond: '5', burst: 5 }, 'perSecond'],
    [{}, 'perSecond'],
    [{ perSecond: 5, burst: 5, extra: 1 }, 'extra'],
    [{ perSecond: 1e9, burst: 5 }, 'perSecond'],
  ])('PUT /v1/rate-limit %j -> 400 naming %s', async (body, field) => {
    const res = await h.call('PUT', '/v1/rate-limit', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
  });
});
