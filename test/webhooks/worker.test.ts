import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cancelHold, confirmHold, createHold } from '../../src/holds/holds.js';
import { ident, withClient } from '../../src/db/pool.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { Operations } from '../../src/ops/operations.js';
import { auditList } from '../../src/tables/audit-log.js';
import { endpointsExactly } from '../helpers/webhooks.js';
import { webhookEventsGet, webhookEventsLease, webhookEventsRecord } from '../../src/tables/webhook-events.js';
import type { WebhookEndpoint } from '../../src/model/webhook-events.js';
import { WebhookWorker, type WebhookWorkerOptions } from '../../src/webhooks/worker.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { WebhookReceiver, webhookSecret } from '../helpers/webhook-receiver.js';

let db: TestDatabase;
let receiver: WebhookReceiver;
beforeAll(async () => {
  db = await testDatabase('webhooks_worker');
  receiver = new WebhookReceiver(webhookSecret());
  await receiver.up();
});
afterAll(async () => {
  await receiver.down();
  await db.close();
});

let clock: ManualClock;
let seq = 0;
beforeEach(async () => {
  await db.pool.query(`DELETE FROM ${ident(db.schema)}.webhook_events`);
  receiver.received.length = 0;
  receiver.answer = () => ({ status: 204 });
  // A little ahead of the database: the events each test writes next are due at the clock's now.
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  clock = new ManualClock(rows[0]!.now.getTime() + 5000);
});

const endpoint = (over: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
  name: 'app',
  url: receiver.url,
  secret: receiver.secret,
  rate: { perSecond: 1000, burst: 1000 },
  concurrency: 4,
  ...over,
});

const worker = (endpoints: WebhookEndpoint[], extra: Partial<WebhookWorkerOptions> = {}) =>
  new WebhookWorker({ pool: db.pool, schema: db.schema, endpoints, clock, random: () => 0, retryRule: { baseMs: 1000, capMs: 60_000, maxRetryAfterMs: 3_600_000 }, ...extra });

async function confirmed(tenant = ''): Promise<string> {
  const id = `h${++seq}`;
  await createHold(db.pool, { id, customerEmail: `${id}@example.com`, ttlSeconds: 600, tenant }, { schema: db.schema });
  await confirmHold(db.pool, id, { schema: db.schema });
  return id;
}

async function eventsOf(holdId: string): Promise<Array<{ id: string; endpoint: string; type: string }>> {
  const { rows } = await db.pool.query(`SELECT id, endpoint, type FROM ${ident(db.schema)}.webhook_events WHERE hold_id = $1 ORDER BY endpoint`, [holdId]);
  return rows;
}

describe('the triggers', () => {
  it('write nothing while no endpoint is active', async () => {
    await endpointsExactly(db.pool, db.schema, []);
    expect(await eventsOf(await confirmed())).toEqual([]);
  });

  it('write one event per endpoint that wants it, by type and tenant', async () => {
    await endpointsExactly(db.pool, db.schema, [{ name: 'all' }, { name: 'acme', tenants: ['acme'] }, { name: 'cancels', types: ['hold.cancelled'] }]);
    expect((await eventsOf(await confirmed('acme'))).map((e) => e.endpoint)).toEqual(['acme', 'all']);
    expect((await eventsOf(await confirmed('other'))).map((e) => e.endpoint)).toEqual(['all']);
    const id = `h${++seq}`;
    await createHold(db.pool, { id, customerEmail: 'x@example.com', ttlSeconds: 600 }, { schema: db.schema });
    await cancelHold(db.pool, id, { schema: db.schema });
    expect((await eventsOf(id)).map((e) => `${e.endpoint} ${e.type}`)).toEqual(['all hold.cancelled', 'cancels hold.cancelled']);
  });

  it('roll back with the change', async () => {
    await endpointsExactly(db.pool, db.schema, [{ name: 'app' }]);
    const id = `h${++seq}`;
    await createHold(db.pool, { id, customerEmail: 'x@example.com', ttlSeconds: 600 }, { schema: db.schema });
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      await confirmHold(client, id, { schema: db.schema });
      await client.query('ROLLBACK');
    });
    expect(await eventsOf(id)).toEqual([]);
  });
});

describe('the lane', () => {
  it('retries a failure at its back-off, honouring Retry-After, under the same webhook-id', async () => {
    const lane = worker([endpoint()]);
    await lane.prepare();
    const [event] = await eventsOf(await confirmed());
    receiver.answer = (_id, attempt) => (attempt === 1 ? { status: 429, headers: { 'retry-after': '30' } } : attempt === 2 ? { status: 500 } : { status: 200 });
    await lane.runOnce();
    await lane.settled();
    expect(await webhookEventsGet(db.pool, db.schema, event!.id)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 429, lastError: 'HTTP 429' });
    // Not before the 30 s it asked for.
    clock.advance(29_000);
    expect((await lane.runOnce()).started).toBe(0);
    clock.advance(1_001);
    await lane.runOnce();
    await lane.settled();
    // Second failure, no Retry-After: base 1 s tripled, lower half of the jitter (random 0): 1.5 s.
    clock.advance(1_499);
    expect((await lane.runOnce()).started).toBe(0);
    clock.advance(2);
    await lane.runOnce();
    await lane.settled();
    expect(await webhookEventsGet(db.pool, db.schema, event!.id)).toMatchObject({ state: 'delivered', attempts: 3, lastStatus: 200 });
    expect(receiver.received.map((r) => r.id)).toEqual([event!.id, event!.id, event!.id]);
  });

  it('gives an event up after the bound, and an audited replay delivers it under the same webhook-id', async () => {
    const lane = worker([endpoint()], { giveUpAfterMs: 60_000 });
    await lane.prepare();
    const [event] = await eventsOf(await confirmed());
    receiver.answer = () => ({ status: 503 });
    for (let i = 0; i < 6; i += 1) {
      await lane.runOnce();
      await lane.settled();
      clock.advance(20_000);
    }
    const dead = await webhookEventsGet(db.pool, db.schema, event!.id);
    expect(dead).toMatchObject({ state: 'dead', lastStatus: 503 });
    const triedBeforeGivingUp = receiver.received.length;
    clock.advance(3_600_000);
    expect((await lane.runOnce()).started).toBe(0);

    const ops = new Operations({ pool: db.pool, schema: db.schema, initialRate: { perSecond: 10, burst: 10 }, clock, actor: { name: 'cli:test' } });
    expect((await ops.webhooks.list({ state: 'dead' })).map((e) => e.id)).toContain(event!.id);
    const replayed = await ops.webhooks.replay(event!.id);
    expect(replayed).toMatchObject({ state: 'pending', replays: 1, attempts: 0 });
    const [entry] = (await auditList(db.pool, db.schema, { limit: 1, action: 'webhook.replay' })).entries;
    expect(entry).toMatchObject({ actor: 'cli:test', target: event!.id, before: { state: 'dead' } });

    receiver.answer = () => ({ status: 204 });
    await lane.runOnce();
    await lane.settled();
    expect(await webhookEventsGet(db.pool, db.schema, event!.id)).toMatchObject({ state: 'delivered', replays: 1 });
    expect(receiver.received.slice(triedBeforeGivingUp).map((r) => r.id)).toEqual([event!.id]);
    // Only a given-up event is replayed; an unknown id is not found.
    await expect(ops.webhooks.replay(event!.id)).rejects.toMatchObject({ code: 'webhook_state', httpStatus: 409 });
    await expect(ops.webhooks.replay('msg_nope')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('holds each endpoint to its own in-flight cap and limiter row', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slowFetch: typeof fetch = async (...args) => {
      await gate;
      return fetch(...args);
    };
    const lane = worker([endpoint({ concurrency: 2 })], { fetch: slowFetch });
    await lane.prepare();
    for (let i = 0; i < 5; i += 1) await confirmed();
    expect((await lane.runOnce()).started).toBe(2);
    // Both slots are taken by the slow requests: nothing more starts.
    expect((await lane.runOnce()).started).toBe(0);
    expect(lane.requestsInFlight).toBe(2);
    release();
    await lane.settled();
    expect((await lane.runOnce()).started).toBe(2);
    await lane.settled();
  });

  it('takes permits from the endpoint row: a burst of 2 sends 2, then waits for the refill', async () => {
    const lane = worker([endpoint({ name: 'slow', rate: { perSecond: 1, burst: 2 } })]);
    await lane.prepare();
    await endpointsExactly(db.pool, db.schema, [{ name: 'slow' }]);
    for (let i = 0; i < 4; i += 1) await confirmed();
    expect((await lane.runOnce()).started).toBe(2);
    await lane.settled();
    const next = await lane.runOnce();
    expect(next.started).toBe(0);
    expect(next.nextInMs).toBeGreaterThan(0);
    clock.advance(1000);
    expect((await lane.runOnce()).started).toBe(1);
    await lane.settled();
  });

  it('fences a record by its lease: a lane whose lease ended changes nothing', async () => {
    await endpointsExactly(db.pool, db.schema, [{ name: 'app' }]);
    const [event] = await eventsOf(await confirmed());
    const first = await webhookEventsLease(db.pool, db.schema, { endpoint: 'app', limit: 10, leaseMs: 1000, now: clock.now() });
    expect(first.events.map((e) => e.id)).toEqual([event!.id]);
    // The lease ends; another lane takes the event.
    clock.advance(1001);
    const second = await webhookEventsLease(db.pool, db.schema, { endpoint: 'app', limit: 10, leaseMs: 1000, now: clock.now() });
    expect(second.events.map((e) => [e.id, e.attempts])).toEqual([[event!.id, 2]]);
    const stale = await webhookEventsRecord(db.pool, db.schema, [{ id: event!.id, leaseToken: first.events[0]!.leaseToken, outcome: 'delivered', status: 200, error: null }]);
    expect(stale).toEqual([]);
    expect(await webhookEventsGet(db.pool, db.schema, event!.id)).toMatchObject({ state: 'pending' });
    const fresh = await webhookEventsRecord(db.pool, db.schema, [{ id: event!.id, leaseToken: second.events[0]!.leaseToken, outcome: 'delivered', status: 200, error: null }]);
    expect(fresh).toEqual([event!.id]);
  });

  it('counts a timeout and a refused connection as failures to retry', async () => {
    // A port just taken and closed again: nothing listens there.
    const closed = new WebhookReceiver(receiver.secret);
    await closed.up();
    await closed.down();
    const lane = worker([endpoint({ url: closed.url })], { timeoutMs: 200 });
    await lane.prepare();
    const [refused] = await eventsOf(await confirmed());
    await lane.runOnce();
    await lane.settled();
    expect(await webhookEventsGet(db.pool, db.schema, refused!.id)).toMatchObject({ state: 'pending', lastStatus: null, lastError: 'connection refused' });

    await db.pool.query(`DELETE FROM ${ident(db.schema)}.webhook_events`);
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
    const slow = worker([endpoint()], { timeoutMs: 200, fetch: hanging });
    await slow.prepare();
    const [timedOut] = await eventsOf(await confirmed());
    await slow.runOnce();
    await slow.settled();
    expect(await webhookEventsGet(db.pool, db.schema, timedOut!.id)).toMatchObject({ state: 'pending', lastStatus: null, lastError: 'no answer within 200 ms' });
  });
});
