import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident } from '../../src/db/pool.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_holds');
});
afterAll(() => h.close());

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

describe('POST /v1/holds', () => {
  it('creates a hold (201), answers a retry with the same body 200 and the same hold, another body 409', async () => {
    const body = { id: 'slot-1', customerEmail: 'a@example.com', ttlSeconds: 1200, metadata: { agent: 7 } };
    const created = await h.call('POST', '/v1/holds', body);
    expect(created.statusCode).toBe(201);
    expect(created.headers.location).toBe('/v1/holds/slot-1');
    const hold = created.json();
    expect(hold).toMatchObject({ id: 'slot-1', status: 'held', metadata: { agent: 7 }, expiredAt: null });
    const retry = await h.call('POST', '/v1/holds', body);
    expect(retry.statusCode).toBe(200);
    expect(retry.json()).toEqual(hold);
    const other = await h.call('POST', '/v1/holds', { ...body, ttlSeconds: 60 });
    expect(other.statusCode).toBe(409);
    expect(other.json()).toEqual({ error: { code: 'idempotency_conflict', message: expect.stringContaining('slot-1') } });
  });

  it('answers the same body sent again after its expiresAt passed with 200 and the hold; another body stays 409', async () => {
    // Time is moved, not waited for: the hold was created two hours ago
    // (through the library with a clock set then), due one hour ago, and has expired since.
    const created = new Date(Date.now() - 2 * 3600_000);
    const body = { id: 'slot-late', customerEmail: 'late@example.com', expiresAt: new Date(created.getTime() + 3600_000).toISOString(), metadata: { agent: 3 } };
    await createHold(h.db.pool, body, { schema: h.db.schema, clock: new ManualClock(created) });
    await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();

    const retry = await h.call('POST', '/v1/holds', body);
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.json()).toMatchObject({ id: 'slot-late', status: 'expired', expiresAt: body.expiresAt, metadata: { agent: 3 } });
    expect(retry.headers.location).toBe('/v1/holds/slot-late');

    const other = await h.call('POST', '/v1/holds', { ...body, metadata: { agent: 4 } });
    expect(other.statusCode).toBe(409);
    expect(other.json().error.code).toBe('idempotency_conflict');

    const fresh = await h.call('POST', '/v1/holds', { ...body, id: 'slot-never-created' });
    expect(fresh.statusCode).toBe(400);
    expect(fresh.json().error).toMatchObject({ field: 'expiresAt', message: 'expiresAt: must be in the future' });
  });

  it('generates an id when none is given, and accepts expiresAt instead of ttlSeconds', async () => {
    const res = await h.call('POST', '/v1/holds', { customerEmail: 'b@example.com', expiresAt: inMinutes(20) });
    expect(res.statusCode).toBe(201);
    expect(res.json().id).toMatch(/^hold_/);
  });

  it.each([
    [{ customerEmail: 'not-an-email', ttlSeconds: 60 }, 'customerEmail'],
    [{ customerEmail: 'c@example.com', ttlSeconds: '60' }, 'ttlSeconds'],
    [{ customerEmail: 'c@example.com', ttlSeconds: 0 }, 'ttlSeconds'],
    [{ customerEmail: 'c@example.com', ttlSeconds: 2_592_001 }, 'ttlSeconds'],
    [{ customerEmail: 'c@example.com', expiresAt: '2001-01-01T00:00:00Z' }, 'expiresAt'],
    [{ customerEmail: 'c@example.com', expiresAt: inMinutes(60 * 24 * 365 * 3) }, 'expiresAt'],
    [{ customerEmail: 'c@example.com', expiresAt: 'tomorrow' }, 'expiresAt'],
    [{ customerEmail: 'c@example.com' }, 'expiresAt'],
    [{ customerEmail: 'c@example.com', ttlSeconds: 60, expiresAt: inMinutes(5) }, 'expiresAt'],
    [{ customerEmail: 'c@example.com', ttlSeconds: 60, colour: 'red' }, 'colour'],
    [{ id: 'bad id/../x', customerEmail: 'c@example.com', ttlSeconds: 60 }, 'id'],
    [{ customerEmail: 'c@example.com', ttlSeconds: 60, metadata: [1, 2] }, 'metadata'],
    [[1, 2, 3], 'body'],
    ['"just a string"', 'body'],
    ['null', 'body'],
  ])('rejects %j with 400 naming %s', async (body, field) => {
    const res = await h.call('POST', '/v1/holds', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: { code: 'validation_error', field, message: expect.stringMatching(new RegExp(`^${field}: `)) } });
  });

  it('answers a missing body with 400 naming the body', async () => {
    const res = await h.call('POST', '/v1/holds');
    expect(res.statusCode).toBe(400);
    expect(res.json().error.field).toBe('body');
  });
});

describe('GET /v1/holds/:id', () => {
  it('shows a held hold with an empty timeline', async () => {
    await h.call('POST', '/v1/holds', { id: 'slot-2', customerEmail: 'd@example.com', ttlSeconds: 600 });
    const res = await h.call('GET', '/v1/holds/slot-2');
    expect(res.statusCode).toBe(200);
    const t = res.json();
    expect(t.hold.id).toBe('slot-2');
    expect(t.intent).toBeNull();
    expect(t.attempts).toEqual([]);
    expect(t.moments).toEqual({ eligibleAt: t.hold.expiresAt, expiredAt: null, emailAvailableAt: null, emailAcceptedAt: null, emailFirstAcceptedAt: null, emailOutcomeAt: null });
    expect(t.outcome).toBeNull();
    expect(t.events).toEqual([]);
  });

  it('tells the four moments once the hold expired and an attempt was recorded', async () => {
    await h.call('POST', '/v1/holds', { id: 'slot-3', customerEmail: 'e@example.com', ttlSeconds: 600 });
    const s = ident(h.db.schema);
    // Move time by backdating the row instead of waiting.
    await h.db.pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '5 seconds' WHERE id = 'slot-3'`);
    await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
    const intentId = 'reservation-expired:slot-3';
    await h.db.pool.query(
      `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt, duration_ms)
       VALUES ($1, 1, gen_random_uuid(), 'sandbox', now(), now(), 'accepted', 'r-1', 12)`,
      [intentId],
    );
    await h.db.pool.query(
      `UPDATE ${s}.email_outbox SET state = 'sent', attempts = 1, sent_at = now(), finished_at = now(), receipt = 'r-1' WHERE id = $1`,
      [intentId],
    );
    const t = (await h.call('GET', '/v1/holds/slot-3')).json();
    expect(t.hold.status).toBe('expired');
    expect(t.intent).toMatchObject({ id: intentId, state: 'sent', receipt: 'r-1' });
    expect(t.intent).not.toHaveProperty('recipient');
    expect(t.moments.eligibleAt).toBe(t.hold.expiresAt);
    expect(t.moments.expiredAt).toBe(t.hold.expiredAt);
    expect(t.moments.emailAvailableAt).toBe(t.intent.createdAt);
    expect(t.moments.emailAcceptedAt).toBe(t.intent.sentAt);
    expect(t.lateness.expirySeconds).toBeGreaterThanOrEqual(5);
    expect(t.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'accepted', receipt: 'r-1', durationMs: 12 })]);
  });

  it('404 for an unknown hold, 400 for an id with odd characters', async () => {
    const missing = await h.call('GET', '/v1/holds/nope');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: { code: 'not_found', message: 'hold "nope" does not exist' } });
    for (const id of ['%20x', 'a%2Fb', '%00', '-leading-dash', 'x'.repeat(129), '%F0%9F%98%80']) {
      const res = await h.call('GET', `/v1/holds/${id}`);
      expect(res.statusCode, id).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'validation_error', field: 'id' });
    }
  });
});

describe('POST /v1/holds/:id/confirm and /cancel', () => {
  it('confirm: 200 with the new state; then 409 hold_not_held with the status it is in', async () => {
    await h.call('POST', '/v1/holds', { id: 'slot-4', customerEmail: 'f@example.com', ttlSeconds: 600 });
    const ok = await h.call('POST', '/v1/holds/slot-4/confirm');
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ id: 'slot-4', status: 'confirmed' });
    for (const action of ['confirm', 'cancel']) {
      const again = await h.call('POST', `/v1/holds/slot-4/${action}`);
      expect(again.statusCode).toBe(409);
      expect(again.json()).toEqual({ error: { code: 'hold_not_held', status: 'confirmed', message: 'hold "slot-4" is confirmed, not held' } });
    }
  });

  it('cancel: 200, accepts an empty JSON body, refuses unknown fields, 404 for unknown holds', async () => {
    await h.call('POST', '/v1/holds', { id: 'slot-5', customerEmail: 'g@example.com', ttlSeconds: 600 });
    const unknown = await h.call('POST', '/v1/holds/slot-5/cancel', { force: true });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.field).toBe('force');
    const ok = await h.call('POST', '/v1/holds/slot-5/cancel', '');
    expect(ok.statusCode).toBe(200);
    expect(ok.json().status).toBe('cancelled');
    expect((await h.call('POST', '/v1/holds/ghost/cancel')).statusCode).toBe(404);
  });

  it('logs one event per transition, with the hold id and never the address', async () => {
    const events = h.logs.events().filter((e) => typeof e.event === 'string' && String(e.event).startsWith('hold.'));
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['hold.created', 'hold.confirmed', 'hold.cancelled']));
    expect(events.find((e) => e.event === 'hold.confirmed')).toMatchObject({ holdId: 'slot-4' });
    expect(events.filter((e) => e.event === 'hold.created' && e.holdId === 'slot-1')).toHaveLength(1);
    expect(h.logs.text).not.toMatch(/@example\.com/);
  });
});

describe('POST /v1/holds/:id/extend', () => {
  it('moves the deadline later (200), is the same hold for the same deadline again, and names the field of a bad request', async () => {
    await h.call('POST', '/v1/holds', { id: 'slot-ext', customerEmail: 'a@example.com', ttlSeconds: 600, remindBeforeSeconds: 120 });
    const to = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3600_000).toISOString();
    const ok = await h.call('POST', '/v1/holds/slot-ext/extend', { expiresAt: to });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ id: 'slot-ext', status: 'held', expiresAt: to, remindBeforeSeconds: 120 });
    const again = await h.call('POST', '/v1/holds/slot-ext/extend', { expiresAt: to });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(ok.json());
    for (const [body, field] of [
      [{}, 'expiresAt'],
      [{ ttlSeconds: -1 }, 'ttlSeconds'],
      [{ ttlSeconds: 60, expiresAt: to }, 'expiresAt'],
      [{ expiresAt: new Date(Date.now() + 60_000).toISOString() }, 'expiresAt'],
      [{ until: to }, 'until'],
    ] as const) {
      const bad = await h.call('POST', '/v1/holds/slot-ext/extend', body);
      expect(bad.statusCode, JSON.stringify(body)).toBe(400);
      expect(bad.json().error).toMatchObject({ code: 'validation_error', field });
    }
    const t = (await h.call('GET', '/v1/holds/slot-ext')).json();
    expect(t.extensions).toHaveLength(1);
    expect(t.emails.map((e: { kind: string }) => e.kind)).toEqual(['reservation-reminder']);
    expect(t.life.map((e: { what: string }) => e.what)).toEqual(['created', 'extended', 'reminder due']);
    expect((await h.call('POST', '/v1/holds/nope/extend', { ttlSeconds: 60 })).statusCode).toBe(404);
    await h.call('POST', '/v1/holds/slot-ext/cancel');
    const late = await h.call('POST', '/v1/holds/slot-ext/extend', { ttlSeconds: 60 });
    expect(late.statusCode).toBe(409);
    expect(late.json().error).toMatchObject({ code: 'hold_not_held', status: 'cancelled' });
  });
});
