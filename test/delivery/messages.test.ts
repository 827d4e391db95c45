import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { rateLimiterResume } from '../../src/tables/rate-limiter.js';
import { deliveryControlGet, deliveryResume } from '../../src/tables/delivery-control.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { messagesStore, messagesSummary } from '../../src/tables/messages.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet, intentsLease } from '../../src/tables/outbox.js';
import { replayIntent } from '../../src/ops/replay.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { prepareMessages } from '../../src/delivery/messages.js';
import { loadTemplates } from '../../src/templates/templates.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { templateFiles } from '../helpers/templates.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tpl_snapshot');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});
afterAll(() => db.close());

let clock: ManualClock;
let n = 0;
let holdId: string;
let intentId: string;

/** One expired hold with this metadata; everything older is out of the way. */
async function expiredHold(metadata: Record<string, unknown>): Promise<void> {
  const s = ident(db.schema);
  await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
  holdId = `snap-${++n}`;
  intentId = `reservation-expired:${holdId}`;
  await createHold(db.pool, { id: holdId, customerEmail: `c${n}@example.com`, ttlSeconds: 60, metadata }, { schema: db.schema });
  await db.pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, [holdId]);
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  clock = new ManualClock(rows[0]!.now);
}

beforeEach(async () => {
  await deliveryResume(db.pool, db.schema);
  await rateLimiterResume(db.pool, db.schema, null);
});

const worker = (gateway: ScriptedGateway, extra: Partial<DeliveryWorkerOptions> = {}) =>
  new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock, random: () => 0.5, ...extra });

const v1 = loadTemplates({
  files: templateFiles({ subject: 'Version one for {{ metadata.name }}', text: 'One: {{ expiresAt }}', html: '<p>One {{ metadata.name }}</p>', meta: { replyTo: 'one@example.com' } }),
});
const v2 = loadTemplates({
  files: templateFiles({ subject: 'Version two for {{ metadata.name }}', text: 'Two: {{ expiresAt }}', html: '<p>Two {{ metadata.name }}</p>', meta: { replyTo: 'two@example.com' } }),
});

describe('every attempt of an intent sends byte-identical content', () => {
  it('a failed attempt and the accepted retry carry the same subject, bodies, headers and key', async () => {
    await expiredHold({ name: 'Ana', slot: 'Tue 10:00', slotAt: '2026-03-03T09:00:00Z', locale: 'de-CH', timeZone: 'Europe/Zurich' });
    const gateway = new ScriptedGateway().script(intentId, { kind: 'failed', reason: '503', outcomeUnknown: true }, { kind: 'accepted', receipt: 'r' });
    expect((await worker(gateway).runOnce()).outcomes).toEqual({ failed: 1 });
    clock.advance(3600_000);
    expect((await worker(gateway).runOnce()).outcomes).toEqual({ accepted: 1 });

    const [first, second] = gateway.calls.map((c) => c.message);
    expect(second).toEqual(first);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    expect(first!.subject).toMatch(/^Ihre Reservierung für Dienstag, 3\. März 2026 um 10:00 ist abgelaufen$/);
    expect(first!.idempotencyKey).toBe(intentId);
    expect(first!.headers['X-Leasehold-Intent-Id']).toBe(intentId);

    const stored = await messagesSummary(db.pool, db.schema, intentId);
    expect(stored).toMatchObject({ subject: first!.subject, template: 'reservation-expired', templateLocale: 'de', locale: 'de-CH', timeZone: 'Europe/Zurich' });
  });
});

describe('a template edited during retries', () => {
  it('the stored message wins over the edit; replay renders the edit, and the trace shows what was sent', async () => {
    await expiredHold({ name: 'Ana' });
    const gateway = new ScriptedGateway().script(intentId, { kind: 'failed', reason: 'timeout', outcomeUnknown: true }, { kind: 'accepted', receipt: 'r' });
    await worker(gateway, { templates: v1 }).runOnce();
    clock.advance(3600_000);
    // The operator deployed v2 while the intent waited for its retry.
    await worker(gateway, { templates: v2 }).runOnce();
    expect(gateway.calls.map((c) => [c.message.subject, c.message.replyTo, c.message.text])).toEqual([
      ['Version one for Ana', 'one@example.com', expect.stringMatching(/^One: /)],
      ['Version one for Ana', 'one@example.com', expect.stringMatching(/^One: /)],
    ]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent' });
    let timeline = await holdTimeline(db.pool, db.schema, holdId);
    expect(timeline.message).toMatchObject({ subject: 'Version one for Ana', templateVersion: v1.list().find((k) => k.kind === 'reservation-expired')!.locales[0]!.version });
    expect(formatTimeline(timeline).join('\n')).toContain('subject "Version one for Ana"');

    await replayIntent(db.pool, intentId, { schema: db.schema });
    timeline = await holdTimeline(db.pool, db.schema, holdId);
    expect(timeline.message).toBeNull();
    expect(formatTimeline(timeline).join('\n')).toContain('subject not rendered yet (rendered at the next send, from the current templates)');

    await worker(gateway, { templates: v2 }).runOnce();
    const replayed = gateway.calls[2]!.message;
    expect([replayed.subject, replayed.replyTo, replayed.idempotencyKey]).toEqual(['Version two for Ana', 'two@example.com', `${intentId}#replay-1`]);
    expect(replayed.html).toBe('<p>Two Ana</p>\n');
    expect((await messagesSummary(db.pool, db.schema, intentId))!.subject).toBe('Version two for Ana');
  });

  it('two workers rendering the same intent store one message: the first stored wins', async () => {
    await expiredHold({ name: 'Bo' });
    // Both workers' leases came back without a stored message (the second one's lease expired mid-round).
    const [leased] = await intentsLease(db.pool, db.schema, { limit: 1, leaseMs: 30_000, token: randomUUID(), provider: 'test', now: null });
    expect(leased!.message).toBeNull();
    const first = await prepareMessages(db.pool, db.schema, v1, [leased!], { from: 'a@example.com', now: new Date() });
    // A second rendering (a worker whose view predates the first insert) does not replace it.
    const rendered = v2.render('reservation-expired', {
      intentId,
      holdId,
      metadata: { name: 'Bo' },
      expiresAt: new Date(),
      expiredAt: new Date(),
      from: 'b@example.com',
    });
    // Nothing stored by the second: it reads the first one's.
    expect(await messagesStore(db.pool, db.schema, [{ ...rendered, intentId }])).toEqual([]);
    const again = await prepareMessages(db.pool, db.schema, v2, [leased!], { from: 'b@example.com', now: new Date() });
    expect(again.get(intentId)).toEqual(first.get(intentId));
  });
});

describe('a template that fails at send time', () => {
  const needsSlot = loadTemplates({
    files: templateFiles({ text: 'Your slot {{ metadata.slot }} expired.', meta: { sample: { metadata: { slot: 'Tue 10:00' } } } }),
  });

  it('for lack of this hold\'s data: rejected with the reason, never sent, never retried', async () => {
    expect(needsSlot.check()).toEqual([]);
    await expiredHold({ name: 'no slot here' });
    const gateway = new ScriptedGateway();
    expect((await worker(gateway, { templates: needsSlot }).runOnce()).outcomes).toEqual({ rejected: 1 });
    expect(gateway.calls).toHaveLength(0);
    const intent = await intentsGet(db.pool, db.schema, intentId);
    expect(intent).toMatchObject({ state: 'rejected', attempts: 1, failedAttempts: 0 });
    expect(intent!.lastError).toBe('template reservation-expired/en/text.liquid: undefined variable: metadata.slot, line:1, col:14');
    expect(await attemptsList(db.pool, db.schema, intentId)).toMatchObject([{ outcome: 'rejected', providerCode: 'template_error' }]);
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
    expect(await messagesSummary(db.pool, db.schema, intentId)).toBeNull();

    clock.advance(24 * 3600_000);
    expect((await worker(gateway, { templates: needsSlot }).runOnce()).leased).toBe(0);
    expect(gateway.calls).toHaveLength(0);
  });

  it('broken for every message: delivery pauses fleet-wide with the reason and the intent stays pending', async () => {
    const broken = loadTemplates({ files: templateFiles({ subject: 'Hi {{ custmer }}' }) });
    expect(broken.check()).toHaveLength(1);
    await expiredHold({});
    const gateway = new ScriptedGateway();
    expect((await worker(gateway, { templates: broken }).runOnce()).outcomes).toEqual({ paused: 1 });
    expect(gateway.calls).toHaveLength(0);
    const control = await deliveryControlGet(db.pool, db.schema);
    expect(control).toMatchObject({ paused: true, pausedBy: 'templates' });
    expect(control.reason).toContain('template reservation-expired/en/subject.liquid: undefined variable: custmer');
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'pending', failedAttempts: 0 });

    // Fixed and restarted: the same intent goes out.
    await deliveryResume(db.pool, db.schema);
    clock.advance(1000);
    const fixed = loadTemplates({ files: templateFiles({ subject: 'Hi {{ metadata.customer | default: "there" }}' }) });
    expect((await worker(gateway, { templates: fixed }).runOnce()).outcomes).toEqual({ accepted: 1 });
    expect(gateway.calls[0]!.message.subject).toBe('Hi there');
  });
});
