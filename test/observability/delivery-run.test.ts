import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * A full run through both lanes with one captured logger: holds created
 * through the API, expired by the ExpiryWorker, sent by the DeliveryWorker
 * against the sandbox (some rejected, some failing). Then /metrics must agree
 * with the database, and the logs must never contain a recipient address.
 */

const HOLDS = 40;
const recipient = (i: number) => `customer.${i}.secret@recipients.leasehold-test.invalid`;

// Deterministic "random" for the sandbox's outcome draws.
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function sample(scrape: string, name: string, labels = ''): number | undefined {
  const line = scrape.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

let h: ApiHarness;
let scrape: string;
beforeAll(async () => {
  h = await apiHarness('delivery_run');
  const { pool, schema } = h.db;
  await rateLimiterSet(pool, schema, { perSecond: 1000, burst: 1000 });
  for (let i = 0; i < HOLDS; i++) {
    const res = await h.call('POST', '/v1/holds', { id: `run-${i}`, customerEmail: recipient(i), ttlSeconds: 600 });
    expect(res.statusCode).toBe(201);
  }
  // Confirm two, so not every hold expires.
  await h.call('POST', '/v1/holds/run-0/confirm');
  await h.call('POST', '/v1/holds/run-1/cancel');
  // Move time: every hold fell due a minute ago.
  await pool.query(`UPDATE ${ident(schema)}.support_reservations SET expires_at = now() - interval '1 minute' WHERE status = 'held'`);

  const expiry = new ExpiryWorker({ pool, schema, logger: h.logger, metrics: h.metrics });
  while ((await expiry.runOnce()).expired.length > 0);

  const gateway = new SandboxGateway({ rejectRate: 0.15, failRate: 0.15, random: seeded(42) });
  const delivery = new DeliveryWorker({ pool, schema, gateway, logger: h.logger, metrics: h.metrics, concurrency: 16, batchSize: 16 });
  for (let round = 0; round < 50; round++) {
    const run = await delivery.runOnce();
    if (run.leased === 0) break;
  }
  scrape = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
});
afterAll(() => h.close());

describe('metrics after a run match the database', () => {
  it('sends by outcome equal the attempt rows by outcome', async () => {
    const { rows } = await h.db.pool.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM ${ident(h.db.schema)}.email_attempts GROUP BY outcome`,
    );
    const byOutcome = Object.fromEntries(rows.map((r) => [r.outcome, r.n]));
    expect(byOutcome.accepted).toBeGreaterThan(0);
    expect(byOutcome.rejected).toBeGreaterThan(0);
    expect(byOutcome.failed).toBeGreaterThan(0);
    for (const [outcome, n] of Object.entries(byOutcome)) {
      expect(sample(scrape, 'leasehold_email_sends_total', `outcome="${outcome}",account="default"`), outcome).toBe(n);
    }
  });

  it('holds expired, intents by state, backlog and ages equal the tables', async () => {
    const s = ident(h.db.schema);
    const expired = (await h.db.pool.query(`SELECT count(*)::int AS n FROM ${s}.support_reservations WHERE status = 'expired'`)).rows[0].n;
    expect(expired).toBe(HOLDS - 2);
    expect(sample(scrape, 'leasehold_holds_expired_total')).toBe(expired);
    expect(sample(scrape, 'leasehold_due_holds')).toBe(0);
    expect(sample(scrape, 'leasehold_oldest_due_hold_age_seconds')).toBe(0);
    const { rows } = await h.db.pool.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM ${s}.email_outbox GROUP BY state`);
    const byState: Record<string, number> = { pending: 0, sent: 0, rejected: 0, dead: 0 };
    for (const r of rows) byState[r.state] = r.n;
    for (const [state, n] of Object.entries(byState)) expect(sample(scrape, 'leasehold_intents', `state="${state}"`), state).toBe(n);
    expect(sample(scrape, 'leasehold_email_backlog')).toBe(byState.pending);
    // Failed sends back off, so some intents are still pending with an age.
    expect(byState.pending).toBeGreaterThan(0);
    expect(sample(scrape, 'leasehold_oldest_pending_intent_age_seconds')).toBeGreaterThanOrEqual(0);
    // One observation per intent that reached a terminal state.
    const terminal = byState.sent! + byState.rejected! + byState.dead!;
    const observed =
      (sample(scrape, 'leasehold_email_attempts_per_intent_count', 'state="sent"') ?? 0) +
      (sample(scrape, 'leasehold_email_attempts_per_intent_count', 'state="rejected"') ?? 0) +
      (sample(scrape, 'leasehold_email_attempts_per_intent_count', 'state="dead"') ?? 0);
    expect(observed).toBe(terminal);
    expect(sample(scrape, 'leasehold_rate_limit_per_second')).toBe(1000);
    expect(sample(scrape, 'leasehold_delivery_paused')).toBe(0);
  });

  it('no label carries a recipient, hold id or intent id', () => {
    expect(scrape).not.toMatch(/@/);
    expect(scrape).not.toMatch(/run-\d/);
    expect(scrape).not.toMatch(/reservation-expired:/);
  });
});

describe('logs of the full run', () => {
  it('tell the story by id and never contain a recipient address or the message body', () => {
    const events = h.logs.events();
    const names = new Set(events.map((e) => e.event));
    for (const name of ['hold.created', 'hold.confirmed', 'hold.cancelled', 'hold.expired', 'intent.created', 'intent.accepted', 'intent.rejected']) {
      expect(names, name).toContain(name);
    }
    const accepted = events.find((e) => e.event === 'intent.accepted')!;
    expect(accepted).toMatchObject({ intentId: expect.stringMatching(/^reservation-expired:run-\d+$/), attempt: 1 });
    const leased = events.find((e) => e.event === 'intent.leased')!;
    expect(leased).toMatchObject({ intentId: expect.stringMatching(/^reservation-expired:run-\d+$/), holdId: expect.stringMatching(/^run-\d+$/) });
    for (let i = 0; i < HOLDS; i++) expect(h.logs.text.includes(recipient(i)), recipient(i)).toBe(false);
    expect(h.logs.text).not.toMatch(/leasehold-test\.invalid/);
    expect(h.logs.text).not.toMatch(/Your reservation/);
  });
});
