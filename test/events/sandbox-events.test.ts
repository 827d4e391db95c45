import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { ingestEvents } from '../../src/events/ingest.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { sandboxOptionsFromEnv } from '../../src/providers/registry.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The whole path on one machine: holds expire, the delivery lane sends
 * through the sandbox, the sandbox reports delivered / bounced / complained
 * into the same ingestion the webhooks use, the trace shows the fifth
 * moment, and the next email to a bounced or complaining address is never
 * sent. Events are emitted with flushEvents() instead of waiting for the
 * sandbox's delay.
 */

let db: TestDatabase;
const metrics = createMetrics();
let sandbox: SandboxGateway;
let round = 0;
beforeAll(async () => {
  db = await testDatabase('sandbox_events');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
  // Each acceptance draws one number: below 0.25 a hard bounce, below 0.5 a complaint, else delivered.
  const draws = [0.1, 0.3, 0.6, 0.9];
  let i = 0;
  sandbox = new SandboxGateway({ events: { bounceRate: 0.25, complaintRate: 0.25, delayMs: 3_600_000 }, random: () => draws[i++ % draws.length]! });
  sandbox.connectEvents((events) => ingestEvents(db.pool, db.schema, events, { metrics }));
});
afterAll(() => db.close());

const EMAILS = ['one@example.com', 'two@example.com', 'three@example.com', 'four@example.com'];

async function expireHoldsFor(emails: string[]): Promise<string[]> {
  round++;
  const ids = emails.map((_, n) => `sbx-${round}-${n}`);
  for (const [n, id] of ids.entries()) await createHold(db.pool, { id, customerEmail: emails[n]!, ttlSeconds: 600 }, { schema: db.schema });
  await db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = ANY ($1)`, [ids]);
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  return ids;
}

describe('sandbox events end to end', () => {
  let holds: string[];

  it('sends, then reports one event per acceptance into email_events, matched to the intents', async () => {
    holds = await expireHoldsFor(EMAILS);
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: sandbox, metrics }).runOnce();
    expect(run).toMatchObject({ leased: 4, outcomes: { accepted: 4 } });
    await sandbox.flushEvents();
    const { rows } = await db.pool.query<{ kind: string; bounce_type: string | null; matched: boolean }>(
      `SELECT kind, bounce_type, intent_id IS NOT NULL AS matched FROM ${ident(db.schema)}.email_events ORDER BY kind`,
    );
    expect(rows).toEqual([
      { kind: 'bounced', bounce_type: 'hard', matched: true },
      { kind: 'complained', bounce_type: null, matched: true },
      { kind: 'delivered', bounce_type: null, matched: true },
      { kind: 'delivered', bounce_type: null, matched: true },
    ]);
    expect((await metrics.emailEvents.get()).values.map((v) => [v.labels.kind, v.value]).sort()).toEqual([
      ['bounced', 1],
      ['complained', 1],
      ['delivered', 2],
    ]);
  });

  it('every trace ends with its fifth moment', async () => {
    const kinds: string[] = [];
    for (const id of holds) {
      const t = await holdTimeline(db.pool, db.schema, id);
      expect(t.outcome, id).not.toBeNull();
      expect(t.moments.emailOutcomeAt).toEqual(t.outcome!.at);
      expect(t.outcome!.at.getTime()).toBeGreaterThanOrEqual(t.moments.emailAcceptedAt!.getTime() - 1000);
      kinds.push(t.outcome!.kind);
      const lines = formatTimeline(t).join('\n');
      expect(lines).toMatch(new RegExp(`5\\. email ${t.outcome!.kind}`));
      expect(lines).toContain('provider events (1):');
      expect(lines).not.toMatch(/@example\.com/);
    }
    expect(kinds.sort()).toEqual(['bounced', 'complained', 'delivered', 'delivered']);
  });

  it('the bounced and the complaining recipients are suppressed, and their next emails are never sent', async () => {
    const { rows: suppressed } = await db.pool.query<{ address: string; reason: string; provider: string }>(
      `SELECT address, reason, provider FROM ${ident(db.schema)}.suppressions ORDER BY reason`,
    );
    expect(suppressed.map((s) => [s.reason, s.provider])).toEqual([
      ['complaint', 'sandbox'],
      ['hard_bounce', 'sandbox'],
    ]);
    const blockedAddresses = new Set(suppressed.map((s) => s.address));

    const acceptedBefore = sandbox.accepted.length;
    const next = await expireHoldsFor(EMAILS);
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: sandbox, metrics }).runOnce();
    expect(run).toMatchObject({ leased: 4, outcomes: { accepted: 2, rejected: 2 } });
    expect(sandbox.accepted.length - acceptedBefore).toBe(2);
    for (const [n, id] of next.entries()) {
      const intent = await intentsGet(db.pool, db.schema, `reservation-expired:${id}`);
      if (blockedAddresses.has(EMAILS[n]!)) {
        expect(intent).toMatchObject({ state: 'rejected' });
        expect(intent!.lastError).toMatch(/^suppressed: (hard bounce|complaint) at /);
      } else {
        expect(intent).toMatchObject({ state: 'sent' });
      }
    }
    // The suppressed ones produce no events (nothing was sent); the two sent ones will.
    await sandbox.close();
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_events`);
    expect(rows[0]!.n).toBe(6);
  });
});

describe('sandbox event settings', () => {
  it('reads SANDBOX_BOUNCE_RATE, SANDBOX_COMPLAINT_RATE and SANDBOX_EVENT_DELAY_MS', () => {
    expect(sandboxOptionsFromEnv({ SANDBOX_BOUNCE_RATE: '0.05', SANDBOX_COMPLAINT_RATE: '0.001', SANDBOX_EVENT_DELAY_MS: '0' })).toEqual({
      events: { bounceRate: 0.05, complaintRate: 0.001, delayMs: 0 },
    });
    expect(() => sandboxOptionsFromEnv({ SANDBOX_BOUNCE_RATE: '0.7', SANDBOX_COMPLAINT_RATE: '0.5' })).toThrow(/SANDBOX_COMPLAINT_RATE/);
    expect(() => sandboxOptionsFromEnv({ SANDBOX_BOUNCE_RATE: 'lots' })).toThrow(/SANDBOX_BOUNCE_RATE/);
  });

  it('with no sink connected, the sandbox makes no events', async () => {
    const lonely = new SandboxGateway({ events: { bounceRate: 1 } });
    await lonely.send(
      { intentId: 'i', holdId: 'h', idempotencyKey: 'i', to: 'x@example.com', from: 'f@example.com', subject: 's', text: 't', html: 'h', headers: {}, tags: {} },
      { attempt: 1, previousOutcomeUnknown: false, signal: new AbortController().signal },
    );
    let emitted = 0;
    lonely.connectEvents(async (events) => {
      emitted += events.length;
    });
    await lonely.flushEvents();
    expect(emitted).toBe(0);
  });
});
