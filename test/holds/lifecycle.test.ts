import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelHold, confirmHold, createHold, extendHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { pauseDelivery, resumeDelivery } from '../../src/client/functions.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { ident } from '../../src/db/pool.js';
import { intentsLease } from '../../src/tables/outbox.js';
import { randomUUID } from 'node:crypto';
import { HoldNotHeldError, ValidationError } from '../../src/errors.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * The hold's whole life on a moved clock: a reminder before expiry, the
 * expiry email, a confirmation, an extension, and deadlines (migration
 * 0024). Each test starts its own clock at the database's now and steps
 * it; at every step the expiry lane runs, then the delivery lane sweeps
 * deadlines and runs a round, as the service's loops would.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('lifecycle');
});
afterAll(() => db.close());

let seq = 0;

async function scenario(options: { noticeDeadlineSeconds?: number } = {}) {
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  const t0 = rows[0]!.now.getTime();
  const clock = new ManualClock(t0);
  const gateway = new ScriptedGateway();
  const metrics = createMetrics();
  const expiry = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock, logger: silentLogger, ...options });
  const delivery = new DeliveryWorker({
    pool: db.pool,
    schema: db.schema,
    gateway,
    clock,
    metrics,
    logger: silentLogger,
    from: 'Shop <shop@example.com>',
    initialRate: { perSecond: 1000, burst: 1000 },
  });
  const id = `life-${++seq}`;
  /** Move to t seconds after the start and run both lanes once. */
  const at = async (t: number) => {
    clock.set(t0 + t * 1000);
    await expiry.runOnce();
    await delivery.sweepDeadlines();
    await delivery.runOnce();
  };
  /** The kinds sent so far, with the lane-time (s after the start) each was sent at. */
  const sent = async () => {
    const { rows } = await db.pool.query<{ template: string; t: number }>(
      `SELECT template, extract(epoch FROM sent_at)::float8 * 1000 AS t FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = $1 AND state = 'sent' ORDER BY sent_at`,
      [id],
    );
    return rows.map((r) => ({ kind: r.template, at: Math.round((r.t - t0) / 100) / 10 }));
  };
  const states = async () => {
    const { rows } = await db.pool.query<{ template: string; state: string }>(
      `SELECT template, state FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = $1 ORDER BY template`,
      [id],
    );
    return Object.fromEntries(rows.map((r) => [r.template, r.state]));
  };
  return { id, clock, gateway, metrics, at, sent, states, opts: { schema: db.schema, clock } };
}

describe("a hold's reminder, expiry and confirmation", () => {
  it('a hold with a 6 s ttl and a 4 s reminder gets the reminder at 2 s and the expiry email at 6 s', async () => {
    const s = await scenario();
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4 }, s.opts);
    expect(await s.states()).toEqual({ 'reservation-reminder': 'pending' });
    for (const t of [0.5, 1, 1.9]) await s.at(t);
    expect(await s.sent()).toEqual([]);
    for (const t of [2, 3, 5.9]) await s.at(t);
    expect(await s.sent()).toEqual([{ kind: 'reservation-reminder', at: 2 }]);
    await s.at(6);
    expect(await s.sent()).toEqual([
      { kind: 'reservation-reminder', at: 2 },
      { kind: 'reservation-expired', at: 6 },
    ]);
    // The reminder says how long is left, counted from when it was rendered (2 s: 4 s left).
    const reminder = s.gateway.calls.find((c) => c.message.intentId.startsWith('reservation-reminder:'))!;
    expect(reminder.message.text).toMatch(/in 4 seconds/);
    const timeline = await holdTimeline(db.pool, db.schema, s.id);
    expect(timeline.life.map((e) => e.what)).toEqual(['created', 'reminder sent', 'expired', 'expiry email sent']);
    expect(timeline.emails.map((e) => e.kind)).toEqual(['reservation-reminder', 'reservation-expired']);
  });

  it('a hold confirmed at 1 s gets no reminder and no expiry email, only the confirmation it asked for', async () => {
    const s = await scenario();
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4, notifyOnConfirm: true }, s.opts);
    await s.at(0.5);
    s.clock.set(s.clock.now().getTime() + 500);
    await confirmHold(db.pool, s.id, s.opts);
    expect(await s.states()).toEqual({ 'reservation-confirmed': 'pending', 'reservation-reminder': 'voided' });
    for (const t of [1, 2, 6, 10]) await s.at(t);
    expect(await s.sent()).toEqual([{ kind: 'reservation-confirmed', at: 1 }]);
    expect(await s.states()).toEqual({ 'reservation-confirmed': 'sent', 'reservation-reminder': 'voided' });
    const timeline = await holdTimeline(db.pool, db.schema, s.id);
    expect(timeline.moments.eligibleAt).toBeNull();
    expect(timeline.life.map((e) => e.what)).toEqual(['created', 'confirmed', 'reminder voided', 'confirmation email sent']);
    const trace = formatTimeline(timeline).join('\n');
    expect(trace).toMatch(/no expiry email: the hold was confirmed at .*, so none will be sent/);
    expect(trace).not.toMatch(/became eligible/);
  });

  it('a hold confirmed or cancelled without asking gets no email at all', async () => {
    for (const settle of [confirmHold, cancelHold]) {
      const s = await scenario();
      await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4 }, s.opts);
      s.clock.set(s.clock.now().getTime() + 1000);
      await settle(db.pool, s.id, s.opts);
      for (const t of [2, 6, 10]) await s.at(t);
      expect(await s.sent()).toEqual([]);
      expect(await s.states()).toEqual({ 'reservation-reminder': 'voided' });
    }
  });

  it('a hold extended at 1 s to 8 s gets its reminder at 4 s, not 2 s, and its expiry email at 8 s', async () => {
    const s = await scenario();
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4 }, s.opts);
    await s.at(0.5);
    s.clock.set(s.clock.now().getTime() + 500);
    const newDeadline = new Date(s.clock.now().getTime() + 7000);
    const extended = await extendHold(db.pool, s.id, { expiresAt: newDeadline }, s.opts);
    expect(extended.expiresAt).toEqual(newDeadline);
    // The same deadline again is a no-op (a retry); an earlier one is refused.
    expect((await extendHold(db.pool, s.id, { expiresAt: newDeadline }, s.opts)).expiresAt).toEqual(newDeadline);
    await expect(extendHold(db.pool, s.id, { expiresAt: new Date(newDeadline.getTime() - 1000) }, s.opts)).rejects.toMatchObject({
      field: 'expiresAt',
    });
    for (const t of [2, 3, 3.9]) await s.at(t);
    expect(await s.sent()).toEqual([]);
    await s.at(4);
    expect(await s.sent()).toEqual([{ kind: 'reservation-reminder', at: 4 }]);
    for (const t of [7.9, 8]) await s.at(t);
    expect(await s.sent()).toEqual([
      { kind: 'reservation-reminder', at: 4 },
      { kind: 'reservation-expired', at: 8 },
    ]);
    const timeline = await holdTimeline(db.pool, db.schema, s.id);
    expect(timeline.extensions).toHaveLength(1);
    expect(timeline.life.map((e) => e.what)).toEqual(['created', 'extended', 'reminder sent', 'expired', 'expiry email sent']);
    // Once expired it cannot be extended.
    await expect(extendHold(db.pool, s.id, { ttlSeconds: 60 }, s.opts)).rejects.toBeInstanceOf(HoldNotHeldError);
  });

  it('with delivery paused from 0 to 7 s the reminder ends missed_deadline, never sent, and the expiry email goes out after the resume', async () => {
    const s = await scenario();
    await pauseDelivery(db.pool, { reason: 'test' }, { schema: db.schema });
    try {
      await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4 }, s.opts);
      for (const t of [1, 2, 4, 5.9]) await s.at(t);
      expect(await s.states()).toEqual({ 'reservation-reminder': 'pending' });
      await s.at(6);
      expect(await s.states()).toEqual({ 'reservation-expired': 'pending', 'reservation-reminder': 'missed_deadline' });
    } finally {
      await resumeDelivery(db.pool, { schema: db.schema });
    }
    await s.at(7);
    expect(await s.sent()).toEqual([{ kind: 'reservation-expired', at: 7 }]);
    expect(s.gateway.calls.map((c) => c.message.intentId)).toEqual([`reservation-expired:${s.id}`]);
    expect((await s.metrics.registry.getSingleMetricAsString('leasehold_intents_missed_deadline_total'))).toMatch(
      /leasehold_intents_missed_deadline_total\{kind="reservation-reminder"\} 1/,
    );
    const timeline = await holdTimeline(db.pool, db.schema, s.id);
    expect(timeline.life.map((e) => e.what)).toEqual(['created', 'expired', 'reminder missed its deadline', 'expiry email sent']);
  });

  it('an expiry email past LEASEHOLD_NOTICE_DEADLINE_S is never leased and ends missed_deadline', async () => {
    const s = await scenario({ noticeDeadlineSeconds: 5 });
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 2 }, s.opts);
    await pauseDelivery(db.pool, { reason: 'test' }, { schema: db.schema });
    try {
      for (const t of [2, 4, 6.9]) await s.at(t);
      expect(await s.states()).toEqual({ 'reservation-expired': 'pending' });
    } finally {
      await resumeDelivery(db.pool, { schema: db.schema });
    }
    // Resumed at 7 s, its deadline (2 s + 5 s) has passed: the lease skips it, the sweep ends it.
    s.clock.set(s.clock.now().getTime() + 100);
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: s.gateway, clock: s.clock, logger: silentLogger }).runOnce();
    expect(run.leased).toBe(0);
    await s.at(7.1);
    expect(await s.states()).toEqual({ 'reservation-expired': 'missed_deadline' });
    expect(s.gateway.calls).toHaveLength(0);
  });

  it("the default reminder is skipped when the hold is shorter than it, and written when an extension leaves room for it; a request's own is refused", async () => {
    const s = await scenario();
    await expect(createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 3, remindBeforeSeconds: 4 }, s.opts)).rejects.toMatchObject({
      field: 'remindBeforeSeconds',
    });
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 3 }, { ...s.opts, defaults: { remindBeforeSeconds: 4 } });
    expect(await s.states()).toEqual({});
    await extendHold(db.pool, s.id, { ttlSeconds: 10 }, s.opts);
    expect(await s.states()).toEqual({ 'reservation-reminder': 'pending' });
    for (const t of [5.9, 6]) await s.at(t);
    expect(await s.sent()).toEqual([{ kind: 'reservation-reminder', at: 6 }]);
  });

  it('a reminder under a lease when its hold is confirmed is not voided then; once its lease runs out unsent, the sweep voids it and closes its attempt', async () => {
    const s = await scenario();
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 6, remindBeforeSeconds: 4 }, s.opts);
    s.clock.set(s.clock.now().getTime() + 2000);
    // A worker leases the reminder and dies before sending it.
    const leased = await intentsLease(db.pool, db.schema, { limit: 5, leaseMs: 1000, token: randomUUID(), provider: 'x', now: s.clock.now() });
    expect(leased.map((i) => i.id)).toEqual([`reservation-reminder:${s.id}`]);
    await confirmHold(db.pool, s.id, s.opts);
    expect(await s.states()).toEqual({ 'reservation-reminder': 'pending' });
    await s.at(3.5); // the lease has run out
    expect(await s.states()).toEqual({ 'reservation-reminder': 'voided' });
    expect(s.gateway.calls).toHaveLength(0);
    const { rows } = await db.pool.query(`SELECT outcome FROM ${ident(db.schema)}.email_attempts WHERE intent_id = $1`, [`reservation-reminder:${s.id}`]);
    expect(rows).toEqual([{ outcome: 'lease_expired' }]);
  });

  it('bad extend input names the field', async () => {
    const s = await scenario();
    await createHold(db.pool, { id: s.id, customerEmail: 'ana@example.com', ttlSeconds: 60 }, s.opts);
    await expect(extendHold(db.pool, s.id, {}, s.opts)).rejects.toMatchObject({ field: 'expiresAt' });
    await expect(extendHold(db.pool, s.id, { ttlSeconds: 0 }, s.opts)).rejects.toMatchObject({ field: 'ttlSeconds' });
    await expect(extendHold(db.pool, s.id, { ttlSeconds: 10, expiresAt: new Date() }, s.opts)).rejects.toBeInstanceOf(ValidationError);
    await expect(extendHold(db.pool, s.id, { ttlSeconds: 40 * 86400 }, s.opts)).rejects.toMatchObject({ field: 'ttlSeconds' });
    await expect(extendHold(db.pool, 'no-such-hold', { ttlSeconds: 10 }, s.opts)).rejects.toMatchObject({ code: 'not_found' });
    await expect(createHold(db.pool, { customerEmail: 'a@example.com', ttlSeconds: 60, remindBeforeSeconds: 1.5 }, s.opts)).rejects.toMatchObject({
      field: 'remindBeforeSeconds',
    });
  });
});
