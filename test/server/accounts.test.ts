import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import type { Accounts } from '../../src/model/accounts.js';
import { intentsGet, intentsLease } from '../../src/tables/outbox.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { insertDueHolds } from '../helpers/holds.js';
import { recordAcceptance } from '../helpers/sent-intent.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * /v1/accounts and POST /v1/intents/:id/move: each account's own rate limit
 * and pause, and moving a pending intent between accounts, over HTTP.
 */

/** Two sandbox accounts, as the accounts file of the brief's example names them. */
const TWO: Accounts = {
  accounts: [
    { name: 'primary', provider: 'sandbox', rate: { perSecond: 2, burst: 2, unit: 'requests' }, settings: {} },
    { name: 'backup', provider: 'sandbox', rate: { perSecond: 10, burst: 10, unit: 'requests' }, settings: {} },
  ],
  failover: ['primary', 'backup'],
};

let single: ApiHarness;
let two: ApiHarness;
beforeAll(async () => {
  single = await apiHarness('api_accounts_single');
  two = await apiHarness('api_accounts_two', {}, { accounts: TWO });
});
afterAll(async () => {
  await single?.close();
  await two?.close();
});

type View = { name: string; failoverIndex: number | null; rate: { perSecond: number; burst: number }; pause: { paused: boolean; reason: string | null; pausedBy: string | null; pausedUntil: string | null }; backlog: number };

async function account(h: ApiHarness, name: string): Promise<View> {
  const res = await h.call('GET', `/v1/accounts/${name}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as View;
}

/** One expired hold with its pending intent; returns the intent id. */
async function pendingIntent(h: ApiHarness, prefix: string): Promise<string> {
  const [holdId] = await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix });
  await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
  return `reservation-expired:${holdId}`;
}

describe('GET /v1/accounts', () => {
  it('without an accounts file: the one account `default`, at the configured rate', async () => {
    const config = loadConfig({});
    const res = await single.call('GET', '/v1/accounts');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.failover).toEqual(['default']);
    expect(body.accounts).toHaveLength(1);
    expect(body.accounts[0]).toMatchObject({
      name: 'default',
      provider: 'sandbox',
      failoverIndex: 0,
      rate: { perSecond: config.ratePerSecond, burst: config.rateBurst },
      pause: { paused: false },
      backlog: 0,
    });
    expect((await account(single, 'default')).name).toBe('default');
  });

  it('with two accounts: both, in failover order, each at its own rate', async () => {
    const body = (await two.call('GET', '/v1/accounts')).json();
    expect(body.failover).toEqual(['primary', 'backup']);
    expect(body.accounts.map((a: View) => [a.name, a.failoverIndex, a.rate.perSecond, a.rate.burst])).toEqual([
      ['primary', 0, 2, 2],
      ['backup', 1, 10, 10],
    ]);
    expect(await account(two, 'backup')).toMatchObject({ name: 'backup', provider: 'sandbox', unit: 'requests', pause: { paused: false } });
  });
});

describe('PUT /v1/accounts/:name/rate-limit', () => {
  it("changes that account's policy only; either half alone keeps the other", async () => {
    const set = await two.call('PUT', '/v1/accounts/backup/rate-limit', { perSecond: 4 });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ perSecond: 4, burst: 10 });
    expect((await account(two, 'backup')).rate).toMatchObject({ perSecond: 4, burst: 10 });
    expect((await account(two, 'primary')).rate).toMatchObject({ perSecond: 2, burst: 2 });
    // Where each limit in force came from: the operator's change, beside the configuration it overrides; the other account's configuration.
    expect((await account(two, 'backup')).rate).toMatchObject({ source: 'operator', configured: { perSecond: 10, burst: 10 } });
    expect((await account(two, 'primary')).rate).toMatchObject({ source: 'configuration', configured: { perSecond: 2, burst: 2 } });

    expect((await two.call('PUT', '/v1/accounts/primary/rate-limit', { burst: 5 })).json()).toMatchObject({ perSecond: 2, burst: 5 });
    expect((await account(two, 'backup')).rate).toMatchObject({ perSecond: 4, burst: 10 });
    // /v1/rate-limit is the first account's in failover.
    expect((await two.call('GET', '/v1/rate-limit')).json()).toMatchObject({ perSecond: 2, burst: 5, source: 'operator', setAt: expect.any(String) });
  });

  it.each([
    [{}, 'perSecond'],
    [{ perSecond: 'fast' }, 'perSecond'],
    [{ burst: 0 }, 'burst'],
    [{ perSecond: 3, colour: 'red' }, 'colour'],
  ])('400 for %j naming %s, and nothing changes', async (payload, field) => {
    const res = await two.call('PUT', '/v1/accounts/backup/rate-limit', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
    expect((await account(two, 'backup')).rate).toMatchObject({ perSecond: 4, burst: 10 });
  });
});

describe('POST /v1/accounts/:name/pause and resume', () => {
  it('pause one account: it shows on that account only, and the fleet keeps running', async () => {
    const res = await two.call('POST', '/v1/accounts/primary/pause', { reason: 'provider incident', forSeconds: 600 });
    expect(res.statusCode, res.body).toBe(200);
    const paused = res.json() as View;
    expect(paused).toMatchObject({ name: 'primary', pause: { paused: true, reason: 'provider incident', pausedBy: 'operator' } });
    const untilMs = Date.parse(paused.pause.pausedUntil!) - Date.now();
    expect(untilMs).toBeGreaterThan(590_000);
    expect(untilMs).toBeLessThanOrEqual(600_000);
    expect((await account(two, 'primary')).pause.paused).toBe(true);
    expect((await account(two, 'backup')).pause.paused).toBe(false);
    expect((await two.call('GET', '/v1/delivery')).json()).toMatchObject({ paused: false });
    expect(two.logs.events().find((e) => e.event === 'account.paused')).toMatchObject({ account: 'primary', reason: 'provider incident' });

    const resumed = await two.call('POST', '/v1/accounts/primary/resume');
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json()).toMatchObject({ name: 'primary', pause: { paused: false } });
    expect((await account(two, 'primary')).pause.paused).toBe(false);
  });

  it('pause without a body uses the default reason and has no end', async () => {
    const res = await two.call('POST', '/v1/accounts/backup/pause');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().pause).toMatchObject({ paused: true, reason: 'paused by an operator', pausedUntil: null });
    expect((await account(two, 'primary')).pause.paused).toBe(false);
    expect((await two.call('POST', '/v1/accounts/backup/resume', {})).json().pause.paused).toBe(false);
  });

  it.each([
    ['pause', { forSeconds: 0 }, 'forSeconds'],
    ['pause', { reason: '   ' }, 'reason'],
    ['pause', { reason: 'x', until: 'later' }, 'until'],
    ['resume', { reason: 'x' }, 'reason'],
  ])('%s with %j is a 400 naming %s; the account stays as it was', async (action, payload, field) => {
    const res = await two.call('POST', `/v1/accounts/primary/${action}`, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
    expect((await account(two, 'primary')).pause.paused).toBe(false);
  });
});

describe('account names', () => {
  it.each([
    ['GET', '/v1/accounts/ghost', undefined],
    ['PUT', '/v1/accounts/ghost/rate-limit', { perSecond: 3 }],
    ['POST', '/v1/accounts/ghost/pause', undefined],
    ['POST', '/v1/accounts/ghost/resume', undefined],
  ] as const)('%s %s: 404 for an account that is not configured', async (method, url, payload) => {
    const res = await two.call(method, url, payload);
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatchObject({ code: 'not_found', message: 'account "ghost" does not exist' });
    // Refused before any write: no limiter row was made for it.
    expect(await rateLimiterGet(two.db.pool, two.db.schema, null, 'ghost')).toBeUndefined();
  });

  it.each(['Primary', 'bad%20name', '-primary', 'a'.repeat(64), 'nul%00', '%F0%9F%93%A7'])('a malformed name %s is a 400 naming `name` on every route', async (name) => {
    for (const [method, url, payload] of [
      ['GET', `/v1/accounts/${name}`, undefined],
      ['PUT', `/v1/accounts/${name}/rate-limit`, { perSecond: 3 }],
      ['POST', `/v1/accounts/${name}/pause`, undefined],
      ['POST', `/v1/accounts/${name}/resume`, undefined],
    ] as const) {
      const res = await two.call(method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(400);
      expect(res.json().error, `${method} ${url}`).toMatchObject({ code: 'validation_error', field: 'name' });
    }
  });
});

describe('POST /v1/intents/:id/move', () => {
  it('moves a pending intent to another account: it counts in that account\'s backlog', async () => {
    const id = await pendingIntent(two, 'mv');
    expect((await account(two, 'primary')).backlog).toBe(1);
    const res = await two.call('POST', `/v1/intents/${id}/move`, { account: 'backup' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, state: 'pending', account: 'backup', pinnedAccount: null });
    expect(await intentsGet(two.db.pool, two.db.schema, id)).toMatchObject({ account: 'backup' });
    expect((await account(two, 'backup')).backlog).toBe(1);
    expect((await account(two, 'primary')).backlog).toBe(0);
    expect(two.logs.events().find((e) => e.event === 'intent.moved')).toMatchObject({ intentId: id, account: 'backup' });

    // While it is being sent (a live lease), it stays where it is.
    await intentsLease(two.db.pool, two.db.schema, { limit: 1, leaseMs: 60_000, token: randomUUID(), provider: 'sandbox', now: null, account: 'backup' });
    const leased = await two.call('POST', `/v1/intents/${id}/move`, { account: 'primary' });
    expect(leased.statusCode).toBe(409);
    expect(leased.json().error).toMatchObject({ code: 'intent_state', state: 'pending' });
    expect(leased.json().error.message).toContain('lease is live');
    expect(await intentsGet(two.db.pool, two.db.schema, id)).toMatchObject({ account: 'backup' });
  });

  it('refuses a sent intent with 409, and leaves it as it was', async () => {
    const id = await pendingIntent(two, 'sent');
    await recordAcceptance(two.db.pool, two.db.schema, id, 'receipt-sent');
    const res = await two.call('POST', `/v1/intents/${id}/move`, { account: 'backup' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: 'intent_state', state: 'sent' });
    expect(await intentsGet(two.db.pool, two.db.schema, id)).toMatchObject({ state: 'sent', account: null });
  });

  it('an account not in failover is a 400 naming `account`; the intent stays', async () => {
    const id = await pendingIntent(two, 'stay');
    const res = await two.call('POST', `/v1/intents/${id}/move`, { account: 'ghost' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field: 'account' });
    expect(res.json().error.message).toContain('primary, backup');
    expect(await intentsGet(two.db.pool, two.db.schema, id)).toMatchObject({ state: 'pending', account: null });
  });

  it.each([
    [undefined, 'body'],
    [{}, 'account'],
    [{ account: 7 }, 'account'],
    [{ account: 'backup', when: 'now' }, 'when'],
  ])('body %j is a 400 naming %s', async (payload, field) => {
    const res = await two.call('POST', '/v1/intents/reservation-expired:stay-0/move', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
  });

  it('400 for a malformed intent id, 404 for an unknown one', async () => {
    const odd = await two.call('POST', '/v1/intents/%3Cscript%3E/move', { account: 'backup' });
    expect(odd.statusCode).toBe(400);
    expect(odd.json().error.field).toBe('id');
    const ghost = await two.call('POST', '/v1/intents/reservation-expired:ghost/move', { account: 'backup' });
    expect(ghost.statusCode).toBe(404);
    expect(ghost.json().error.code).toBe('not_found');
  });
});
