import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHold,
  createLeasehold,
  createLogger,
  deleteTenantPolicy,
  getHold,
  getTenantPolicy,
  listTenantPolicies,
  putTenantPolicy,
  getIntent,
  listIntents,
  NotFoundError,
  pauseDelivery,
  resumeDelivery,
  silentLogger,
  wakeOnNotify,
  withTransaction,
  intentIdForHold,
  ValidationError,
  ManualClock,
  type HoldExpiredEvent,
  type IntentDeadEvent,
  type IntentRejectedEvent,
  type IntentSentEvent,
} from '../../src/index.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { insertDueHolds } from '../helpers/holds.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('library');
});
afterAll(() => db.close());

/** A logger whose JSON lines the test reads. */
function capturedLogger(level = 'warn') {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('one convention', () => {
  it('the client and the free functions do the same; a get of a missing row is undefined, a change to one is NotFound', async () => {
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    const { hold, created } = await lh.holds.create({ id: 'lib-1', customerEmail: 'ana@example.com', ttlSeconds: 600 });
    expect(created).toBe(true);
    expect(await lh.holds.get('lib-1')).toEqual(hold);
    expect(await getHold(db.pool, 'lib-1', { schema: db.schema })).toEqual(hold);
    expect(await lh.holds.get('lib-missing')).toBeUndefined();
    expect(await lh.intents.get(intentIdForHold('lib-missing'))).toBeUndefined();
    expect(await getIntent(db.pool, intentIdForHold('lib-missing'), { schema: db.schema })).toBeUndefined();
    expect(await lh.suppressions.get('nobody@example.com')).toBeUndefined();
    await expect(lh.holds.confirm('lib-missing')).rejects.toBeInstanceOf(NotFoundError);
    await expect(lh.intents.replay(intentIdForHold('lib-missing'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(lh.holds.extend('lib-missing', { ttlSeconds: 60 })).rejects.toBeInstanceOf(NotFoundError);
    // Lifting a suppression that is not there is a change to a missing row; the error names the hash, not the address.
    const notSuppressed = await lh.suppressions.remove('nobody@example.com').catch((e: Error) => e);
    expect(notSuppressed).toBeInstanceOf(NotFoundError);
    expect((notSuppressed as Error).message).not.toContain('nobody@example.com');
    await lh.suppressions.add('gone@example.com');
    expect(await lh.suppressions.remove('gone@example.com')).toMatchObject({ reason: 'manual' });
    expect((await lh.holds.cancel('lib-1')).status).toBe('cancelled');
  });

  it('says its refusals as the caller asked: the extension field sent, the time in ISO 8601, a reminder longer than the hold, an IDN domain', async () => {
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    const { hold } = await lh.holds.create({ id: 'lib-words', customerEmail: 'ana@bücher.de', ttlSeconds: 3600 });
    expect(hold.customerEmail).toBe('ana@xn--bcher-kva.de');
    const current = hold.expiresAt.toISOString();
    await expect(lh.holds.extend('lib-words', { ttlSeconds: 10 })).rejects.toMatchObject({
      field: 'ttlSeconds',
      message: `ttlSeconds: must reach past the hold's current expiresAt (${current}): extending only moves a hold later`,
    });
    await expect(lh.holds.extend('lib-words', { expiresAt: new Date(hold.expiresAt.getTime() - 1000) })).rejects.toMatchObject({
      field: 'expiresAt',
      message: `expiresAt: must be after the hold's current expiresAt (${current})`,
    });
    await expect(lh.holds.create({ customerEmail: 'ana@example.com', ttlSeconds: 60, remindBeforeSeconds: 120 })).rejects.toMatchObject({
      field: 'remindBeforeSeconds',
    });
    await expect(lh.holds.create({ customerEmail: 'josé@example.com', ttlSeconds: 60 })).rejects.toThrow(/customerEmail: must have an ASCII local part/);
    // Settled, so the lane tests below see only their own holds come due.
    await lh.holds.cancel('lib-words');
  });

  it('free functions run inside the application transaction and roll back with it', async () => {
    await expect(
      withTransaction(db.pool, async (client) => {
        await createHold(client, { id: 'lib-tx', customerEmail: 'bo@example.com', ttlSeconds: 600 }, { schema: db.schema });
        const paused = await pauseDelivery(client, { reason: 'maintenance' }, { schema: db.schema, logger: silentLogger });
        expect(paused.paused).toBe(true);
        throw new Error('the application changed its mind');
      }),
    ).rejects.toThrow(/changed its mind/);
    expect(await getHold(db.pool, 'lib-tx', { schema: db.schema })).toBeUndefined();
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    expect((await lh.delivery.get()).paused).toBe(false);
    await lh.delivery.pause({ reason: 'for a moment' });
    expect((await lh.delivery.get()).paused).toBe(true);
    expect((await resumeDelivery(db.pool, { schema: db.schema, logger: silentLogger })).paused).toBe(false);
  });
});

describe('lane events', () => {
  it('expired: after the expiry transaction commits, with hold id, intent id and expiredAt; a failing listener is logged and the lane carries on', async () => {
    const clock = new ManualClock('2031-01-01T00:00:00Z');
    const { logger, lines } = capturedLogger();
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger, clock });
    await lh.holds.create({ id: 'ev-exp-1', customerEmail: 'cy@example.com', ttlSeconds: 60 });
    await lh.holds.create({ id: 'ev-exp-2', customerEmail: 'di@example.com', ttlSeconds: 60 });
    const worker = lh.expiryWorker();
    const heard: Array<HoldExpiredEvent & { committed: string | undefined }> = [];
    worker.on('expired', () => {
      throw new Error('listener bug');
    });
    worker.on('expired', async () => {
      throw new Error('async listener bug');
    });
    worker.on('expired', (event) => {
      // Fired after commit: another session already sees the hold expired (checked below, once the query returns).
      heard.push({ ...event, committed: undefined });
    });
    clock.advance(61_000);
    const run = await worker.runOnce();
    expect(run.expired).toHaveLength(2);
    expect(heard.map((e) => e.holdId).sort()).toEqual(['ev-exp-1', 'ev-exp-2']);
    for (const event of heard) {
      expect(event.intentId).toBe(intentIdForHold(event.holdId));
      expect(event.expiredAt.toISOString()).toBe(clock.now().toISOString());
      const { rows } = await db.pool.query<{ status: string }>(`SELECT status FROM ${ident(db.schema)}.support_reservations WHERE id = $1`, [event.holdId]);
      expect(rows[0]?.status).toBe('expired');
    }
    await waitFor(() => lines.filter((l) => l.event === 'lane.listener_failed').length === 4, 'listener failures logged');
    expect(lines.filter((l) => l.event === 'lane.listener_failed').every((l) => l.laneEvent === 'expired')).toBe(true);
    // The lane still works after its listeners threw.
    await lh.holds.create({ id: 'ev-exp-3', customerEmail: 'ed@example.com', ttlSeconds: 60 });
    clock.advance(61_000);
    expect((await worker.runOnce()).expired.map((h) => h.id)).toEqual(['ev-exp-3']);
    expect(heard.map((e) => e.holdId)).toContain('ev-exp-3');
  });

  it('a rolled-back expiry transaction tells nobody', async () => {
    const clock = new ManualClock('2032-01-01T00:00:00Z');
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger, clock });
    await lh.holds.create({ id: 'ev-rollback', customerEmail: 'fa@example.com', ttlSeconds: 60 });
    const { Faults } = await import('../../src/runtime/faults.js');
    const faults = new Faults(async (point) => {
      if (point === 'expiry.locked') throw new Error('crash before commit');
    });
    const worker = lh.expiryWorker({ faults });
    const heard: string[] = [];
    worker.on('expired', (e) => heard.push(e.holdId));
    clock.advance(61_000);
    await expect(worker.runOnce()).rejects.toThrow(/crash before commit/);
    expect(heard).toEqual([]);
    expect((await lh.holds.get('ev-rollback'))?.status).toBe('held');
    await lh.holds.cancel('ev-rollback');
  });

  it('sent, rejected, dead: after the results are recorded, with attempt, receipt or reason and possibleDuplicate', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const clock = new ManualClock('2033-01-01T00:00:00Z');
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger, clock });
    for (const id of ['ev-sent', 'ev-rejected', 'ev-dead']) await lh.holds.create({ id, customerEmail: `${id}@example.com`, ttlSeconds: 60 });
    clock.advance(61_000);
    await lh.expiryWorker().runOnce();
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'msg' })
      .script(intentIdForHold('ev-rejected'), { kind: 'rejected', reason: 'mailbox does not exist' })
      .script(intentIdForHold('ev-dead'), { kind: 'failed', reason: 'provider down', outcomeUnknown: false });
    const worker = lh.deliveryWorker({ gateway, maxAttempts: 1, from: 'Shop <shop@shop.test>', initialRate: { perSecond: 1000, burst: 1000 } });
    const sent: IntentSentEvent[] = [];
    const rejected: IntentRejectedEvent[] = [];
    const dead: IntentDeadEvent[] = [];
    worker.on('sent', (e) => sent.push(e)).on('rejected', (e) => rejected.push(e)).on('dead', (e) => dead.push(e));
    const run = await worker.runOnce();
    expect(run.leased).toBe(3);
    expect(sent).toEqual([{ intentId: intentIdForHold('ev-sent'), holdId: 'ev-sent', attempt: 1, receipt: expect.stringMatching(/^msg-/), possibleDuplicate: false }]);
    expect(rejected).toEqual([{ intentId: intentIdForHold('ev-rejected'), holdId: 'ev-rejected', attempt: 1, reason: 'mailbox does not exist' }]);
    expect(dead).toEqual([{ intentId: intentIdForHold('ev-dead'), holdId: 'ev-dead', attempt: 1, reason: 'provider down' }]);
    // Each event's row is committed by the time it is heard.
    expect((await lh.intents.get(intentIdForHold('ev-sent')))?.state).toBe('sent');
    expect((await lh.intents.get(intentIdForHold('ev-dead')))?.state).toBe('dead');
  });
});

describe('defaults', () => {
  it('a delivery worker left at the example sender warns once through its logger', () => {
    const { logger, lines } = capturedLogger();
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger });
    lh.deliveryWorker({ gateway: new ScriptedGateway() });
    lh.deliveryWorker({ gateway: new ScriptedGateway(), from: 'Shop <shop@shop.test>' });
    expect(lines.filter((l) => l.event === 'delivery.example_sender')).toHaveLength(1);
  });

  it('wakeOnNotify: an in-process delivery lane sends within moments of an expiry, without waiting for its poll', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    const gateway = new ScriptedGateway();
    const delivery = lh.deliveryWorker({ gateway, from: 'Shop <shop@shop.test>', pollIntervalMs: 60_000, initialRate: { perSecond: 1000, burst: 1000 } });
    const sent: string[] = [];
    delivery.on('sent', (e) => sent.push(e.holdId));
    // Count the wake-ups: the listener wakes once as soon as its LISTEN is in
    // place (to catch anything committed before), then once per NOTIFY.
    let wakes = 0;
    const wake = wakeOnNotify({ wake: () => ((wakes += 1), delivery.wake()) }, { connectionString: db.url, schema: db.schema, logger: silentLogger });
    delivery.start();
    try {
      await waitFor(() => wakes >= 1, 'the LISTEN to be in place');
      // The worker now sleeps for its 60 s poll; only the expiry lane's NOTIFY can wake it.
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'ev-notify' });
      await lh.expiryWorker().runOnce();
      await waitFor(() => wakes >= 2 && sent.includes('ev-notify-0'), 'the NOTIFY to wake the delivery lane', 5_000);
    } finally {
      await wake.stop();
      await delivery.stop();
    }
  });

  it("wakeOnNotify with ownPayload: the NOTIFY of this process's expiry worker (notifyPayload) wakes nothing; another process's does", async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    let wakes = 0;
    const wake = wakeOnNotify({ wake: () => void (wakes += 1) }, { connectionString: db.url, schema: db.schema, logger: silentLogger, ownPayload: 'process:me' });
    try {
      await waitFor(() => wakes >= 1, 'the LISTEN to be in place');
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'own-notify' });
      await lh.expiryWorker({ notifyPayload: 'process:me' }).runOnce();
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'other-notify' });
      await lh.expiryWorker({ notifyPayload: 'process:other' }).runOnce();
      // Notifications arrive in commit order: once the other's has woken, the own one would have too.
      await waitFor(() => wakes >= 2, "the other process's NOTIFY", 5_000);
      await new Promise((r) => setTimeout(r, 100));
      expect(wakes).toBe(2);
    } finally {
      await wake.stop();
    }
  });
});

describe('tenants', () => {
  it('lh.holds.create takes a tenant; lh.intents.list and listIntents filter by it, paging to the end', async () => {
    const clock = new ManualClock('2034-01-01T00:00:00Z');
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger, clock });
    const ids = ['tn-1', 'tn-2', 'tn-3', 'tn-4', 'tn-5'];
    for (const [i, id] of ids.entries()) {
      const { hold } = await lh.holds.create({ id, customerEmail: 'ty@example.com', ttlSeconds: 60, ...(i % 2 === 0 ? { tenant: 'umbrella' } : {}) });
      expect(hold.tenant).toBe(i % 2 === 0 ? 'umbrella' : '');
      // One by one, so the intents' created_at order is the holds' order.
      clock.advance(61_000);
      await lh.expiryWorker().runOnce();
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await lh.intents.list({ tenant: 'umbrella', limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.intents.every((intent) => intent.tenant === 'umbrella')).toBe(true);
      seen.push(...page.intents.map((intent) => intent.holdId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['tn-5', 'tn-3', 'tn-1']);
    const empty = await listIntents(db.pool, { tenant: '', state: 'pending' }, { schema: db.schema });
    expect(empty.intents.map((intent) => intent.holdId).filter((id) => id.startsWith('tn-'))).toEqual(['tn-4', 'tn-2']);
    await expect(lh.intents.list({ tenant: 'not a tenant' })).rejects.toMatchObject({ field: 'tenant' });
    await expect(listIntents(db.pool, { tenant: 'x'.repeat(129) }, { schema: db.schema })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('tenant policies', () => {
  it('lh.tenants.put / get / list / delete and the free functions do the same; a get of none is undefined, a delete of none NotFound', async () => {
    const { logger, lines } = capturedLogger('info');
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger });
    expect(await lh.tenants.get('initech')).toBeUndefined();
    const first = await lh.tenants.put('initech', { perSecond: 4, weight: 2, from: 'Initech <no-reply@initech.example>' });
    expect(first.created).toBe(true);
    expect(first.policy).toMatchObject({ tenant: 'initech', perSecond: 4, burst: 4, weight: 2, account: null, from: 'Initech <no-reply@initech.example>', replyTo: null });
    const second = await putTenantPolicy(db.pool, 'initech', {}, { schema: db.schema, logger: silentLogger });
    expect(second.created).toBe(false);
    expect(second.policy).toMatchObject({ perSecond: null, burst: null, weight: 1, from: null });
    expect(await getTenantPolicy(db.pool, 'initech', { schema: db.schema })).toEqual(second.policy);
    expect(lines.find((line) => line['event'] === 'tenant.policy_set')).toMatchObject({ tenant: 'initech', created: true, from: true });
    expect(JSON.stringify(lines)).not.toContain('no-reply@initech.example');

    await lh.tenants.put('', { weight: 5 });
    const page = await lh.tenants.list({ limit: 1 });
    expect(page.policies.map((p) => p.tenant)).toEqual(['']);
    const rest = await listTenantPolicies(db.pool, { cursor: page.nextCursor! }, { schema: db.schema });
    expect(rest.policies.map((p) => p.tenant)).toEqual(['initech']);
    expect(rest.nextCursor).toBeNull();

    expect(await lh.tenants.delete('initech')).toEqual(second.policy);
    await expect(deleteTenantPolicy(db.pool, 'initech', { schema: db.schema })).rejects.toBeInstanceOf(NotFoundError);
    await lh.tenants.delete('');
  });

  it('bad input throws ValidationError naming the field; `account` is checked only against the accounts a caller passes', async () => {
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    await expect(lh.tenants.put('not a tenant', {})).rejects.toMatchObject({ field: 'tenant' });
    await expect(lh.tenants.get('-x')).rejects.toMatchObject({ field: 'tenant' });
    await expect(lh.tenants.put('hooli', { burst: 2 })).rejects.toMatchObject({ field: 'burst' });
    await expect(lh.tenants.put('hooli', { weight: 0 })).rejects.toMatchObject({ field: 'weight' });
    await expect(lh.tenants.put('hooli', { replyTo: 'nope' })).rejects.toMatchObject({ field: 'replyTo' });
    await expect(lh.tenants.put('hooli', { perSecond: 1, color: 'red' } as never)).rejects.toMatchObject({ field: 'color', message: 'color: unknown field' });
    await expect(lh.tenants.list({ limit: 0 })).rejects.toMatchObject({ field: 'limit' });
    await expect(lh.tenants.put('hooli', { account: 'elsewhere' }, { accounts: ['primary', 'backup'] })).rejects.toMatchObject({
      field: 'account',
      message: 'account: must be a configured account (primary, backup)',
    });
    expect(await lh.tenants.get('hooli')).toBeUndefined();
    // The library does not read an accounts file: without `accounts`, any well-formed name is stored.
    expect((await lh.tenants.put('hooli', { account: 'elsewhere' })).policy.account).toBe('elsewhere');
    expect((await lh.tenants.put('hooli', { account: 'primary' }, { accounts: ['primary'] })).policy.account).toBe('primary');
    await lh.tenants.delete('hooli');
  });
});
