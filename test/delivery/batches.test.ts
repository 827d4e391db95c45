import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker, type DeliveryRun } from '../../src/delivery/worker.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { Faults } from '../../src/runtime/faults.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { Registry } from 'prom-client';
import { createMetrics } from '../../src/observability/metrics.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { expireHolds } from '../helpers/provider-e2e.js';

/**
 * Batch sending on local stand-ins of Resend (/emails/batch, idempotency
 * per batch key, strict validation) and Postmark (/email/batch, a result
 * per message): one request carries many emails, and each member keeps
 * its own history, outcome and receipt.
 */
let db: TestDatabase;
let resend: FakeResend;
let postmark: FakePostmark;
beforeAll(async () => {
  db = await testDatabase('batches');
  resend = new FakeResend();
  postmark = new FakePostmark();
  await resend.start();
  await postmark.start();
});
afterAll(async () => {
  await db.close();
  await resend.stop();
  await postmark.stop();
});

let label = 0;
beforeEach(async () => {
  const s = ident(db.schema);
  await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL, batch_id = NULL WHERE state = 'pending'`);
  await db.pool.query(`UPDATE ${s}.email_batches SET open = false`);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
  await db.pool.query(`UPDATE ${s}.rate_limiter SET cooldown_until = NULL, tokens = burst, refilled_at = now()`);
  resend.deliveries.length = 0;
  postmark.outbound.length = 0;
  resend.processingMs = 0;
});

const resendWorker = (extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {}) =>
  new DeliveryWorker({
    pool: db.pool,
    schema: db.schema,
    gateway: new ResendGateway({ apiKey: resend.apiKey, baseUrl: resend.url }),
    sendTimeoutMs: 300,
    leaseMs: 5000,
    random: () => 0.5,
    ...extra,
  });

const postmarkWorker = () =>
  new DeliveryWorker({
    pool: db.pool,
    schema: db.schema,
    gateway: new PostmarkGateway({ serverToken: postmark.serverToken, baseUrl: postmark.url }),
    sendTimeoutMs: 1000,
    leaseMs: 5000,
    random: () => 0.5,
  });

/** Rounds until nothing more is leased; intents backing off are due at once (tests move time). */
async function drain(w: DeliveryWorker, rounds = 20): Promise<DeliveryRun[]> {
  const runs: DeliveryRun[] = [];
  for (let i = 0; i < rounds; i++) {
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() WHERE state = 'pending' AND lease_token IS NULL`);
    const run = await w.runOnce();
    runs.push(run);
    if (run.leased === 0) break;
  }
  return runs;
}

async function rows(ids: string[]) {
  const { rows } = await db.pool.query<{ id: string; state: string; receipt: string | null; possible_duplicate: boolean; batch_id: string | null }>(
    `SELECT id, state, receipt, possible_duplicate, batch_id FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) ORDER BY id`,
    [ids],
  );
  return rows;
}

const intentOf = (d: { headers: Record<string, string> }) => d.headers['X-Leasehold-Intent-Id']!;
const batchRequests = () => resend.requests.filter((r) => r.path === '/emails/batch');

describe('Resend batches', () => {
  it('one request carries the due intents; each member gets its own receipt, attempt and timeline line', async () => {
    const ids = await expireHolds(db, `rb-${++label}`, 30);
    const before = batchRequests().length;
    const registry = new Registry();
    const run = await resendWorker({ metrics: createMetrics(registry) }).runOnce();
    expect(run.outcomes).toEqual({ accepted: 30 });
    expect(batchRequests().length - before).toBe(1);
    const scrape = await registry.metrics();
    expect(scrape).toContain('leasehold_emails_per_request_count{account="default"} 1');
    expect(scrape).toContain('leasehold_emails_per_request_sum{account="default"} 30');
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());

    const sent = await rows(ids);
    expect(sent.every((r) => r.state === 'sent' && !r.possible_duplicate && r.batch_id === null)).toBe(true);
    // Each receipt is the id Resend gave that member.
    const idOf = new Map(resend.deliveries.map((d) => [intentOf(d), d.id]));
    expect(sent.every((r) => r.receipt === idOf.get(r.id))).toBe(true);
    const [attempt] = await attemptsList(db.pool, db.schema, ids[0]!);
    expect(attempt).toMatchObject({ outcome: 'accepted', batchId: expect.any(String) });
    const timeline = await holdTimeline(db.pool, db.schema, ids[0]!.replace('reservation-expired:', ''));
    expect(formatTimeline(timeline).some((l) => l.includes(`sent in batch ${attempt!.batchId} (30 members)`))).toBe(true);
  });

  it('a batch the database refuses to record fails without a send and backs off; the round still records the batch beside it that was accepted', async () => {
    const ids = await expireHolds(db, `rbegin-${++label}`, 150);
    const s = ident(db.schema);
    // The database refuses the batch row holding ids[0] (a constraint, a
    // full disk): that request is never made.
    await db.pool.query(`CREATE FUNCTION ${s}.refuse_batch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.members @> ARRAY['${ids[0]}'] THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
    await db.pool.query(`CREATE TRIGGER refuse_batch BEFORE INSERT ON ${s}.email_batches FOR EACH ROW EXECUTE FUNCTION ${s}.refuse_batch()`);
    const before = resend.deliveries.length;
    try {
      const run = await resendWorker({ batchSize: 150, concurrency: 200 }).runOnce();
      // Two requests (Resend takes 100 a batch): one accepted, one refused before it left.
      expect([run.outcomes.accepted, run.outcomes.failed].sort((a, b) => a! - b!)).toEqual([50, 100]);
      const delivered = new Set(resend.deliveries.slice(before).map(intentOf));
      const after = await rows(ids);
      expect(after.filter((r) => r.state === 'sent').map((r) => r.id).sort()).toEqual([...delivered].sort());
      const back = after.filter((r) => r.state !== 'sent');
      expect(back.map((r) => r.id)).toContain(ids[0]);
      // Backing off, unleased, counted as a failure, never possibly sent: a refusal that lasts ends them dead, not in a loop.
      const { rows: state } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${s}.email_outbox
          WHERE id = ANY ($1) AND state = 'pending' AND lease_token IS NULL AND failed_attempts = 1
            AND available_at > now() AND NOT outcome_unknown_seen AND batch_id IS NULL`,
        [back.map((r) => r.id)],
      );
      expect(state[0]!.n).toBe(back.length);
    } finally {
      await db.pool.query(`DROP TRIGGER refuse_batch ON ${s}.email_batches; DROP FUNCTION ${s}.refuse_batch()`);
    }
    // Due again (tests move time: drain makes them due), they go once each, unflagged.
    await drain(resendWorker({ batchSize: 150, concurrency: 200 }));
    expect((await rows(ids)).every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
  });

  it('a member with a bad address is rejected alone; the others go again in a new batch', async () => {
    const ids = await expireHolds(db, `rbad-${++label}`, 6);
    const bad = ids[2]!;
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET recipient = 'not an address' WHERE id = $1`, [bad]);
    const w = resendWorker();
    expect((await w.runOnce()).outcomes).toEqual({ rejected: 1, abandoned: 5 });
    await drain(w);
    const after = await rows(ids);
    expect(after.find((r) => r.id === bad)!.state).toBe('rejected');
    expect(after.filter((r) => r.id !== bad).every((r) => r.state === 'sent')).toBe(true);
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual(ids.filter((id) => id !== bad).sort());
    // The five went in one new batch, not one by one.
    const keys = new Set(resend.deliveries.map((d) => d.batchKey));
    expect(keys.size).toBe(1);
  });

  it('a refusal that names no member sends each alone from then on, so only the one at fault is refused', async () => {
    const ids = await expireHolds(db, `rnone-${++label}`, 4);
    resend.queue({ status: 422, body: { statusCode: 422, name: 'validation_error', message: 'Invalid `to` field.' } }, '/emails/batch');
    const w = resendWorker();
    expect((await w.runOnce()).outcomes).toEqual({ abandoned: 4 });
    await drain(w);
    expect((await rows(ids)).every((r) => r.state === 'sent')).toBe(true);
    expect(resend.deliveries.every((d) => d.batchKey === undefined)).toBe(true);
  });

  it('an unknown outcome keeps the members together: resent whole under the same key and body, delivered once', async () => {
    const ids = await expireHolds(db, `runk-${++label}`, 8);
    resend.processingMs = 600; // longer than the 300 ms send timeout: the request arrived, the answer is lost
    const w = resendWorker();
    expect((await w.runOnce()).outcomes).toEqual({ failed: 8 });
    const bound = await rows(ids);
    expect(new Set(bound.map((r) => r.batch_id)).size).toBe(1);
    expect(bound[0]!.batch_id).not.toBeNull();
    await new Promise((r) => setTimeout(r, 500)); // the first request finishes at the stand-in
    resend.processingMs = 0;
    await drain(w);
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    // Every email delivered exactly once, by the one batch key.
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    expect(new Set(resend.deliveries.map((d) => d.batchKey)).size).toBe(1);
    expect(batchRequests().filter((r) => r.headers['idempotency-key'] === resend.deliveries[0]!.batchKey)).toHaveLength(2);
    const attempts = await attemptsList(db.pool, db.schema, ids[0]!);
    expect(attempts.map((a) => [a.outcome, a.batchId])).toEqual([
      ['failed', bound[0]!.batch_id],
      ['accepted', bound[0]!.batch_id],
    ]);
  });

  it('an open batch stays bound through a 429 and a stop() on its resends, and goes out once under its key', async () => {
    const ids = await expireHolds(db, `rkeep-${++label}`, 4);
    resend.processingMs = 600;
    expect((await resendWorker().runOnce()).outcomes).toEqual({ failed: 4 });
    await new Promise((r) => setTimeout(r, 500));
    resend.processingMs = 0;
    const boundTo = async () => new Set((await rows(ids)).map((r) => r.batch_id));
    const [batchId] = [...(await boundTo())];
    expect(batchId).toBeTruthy();
    const due = () => db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() WHERE id = ANY ($1)`, [ids]);

    // A resend answered 429: not processed, so the first send is still unknown.
    await due();
    resend.queue({ status: 429, body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests.' }, headers: { 'retry-after': '1' } }, '/emails/batch');
    expect((await resendWorker().runOnce()).outcomes).toEqual({ rate_limited: 4 });
    expect(await boundTo()).toEqual(new Set([batchId]));
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET cooldown_until = NULL, tokens = burst, refilled_at = now()`);

    // A resend given back by stop() before it left.
    await due();
    let w: DeliveryWorker;
    w = resendWorker({ faults: new Faults(async (point) => void (point === 'delivery.leased' && w.stop())) });
    expect((await w.runOnce()).outcomes).toEqual({ abandoned: 4 });
    expect(await boundTo()).toEqual(new Set([batchId]));

    await drain(resendWorker());
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent' && !r.possible_duplicate && r.batch_id === null)).toBe(true);
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    expect(new Set(resend.deliveries.filter((d) => ids.includes(intentOf(d))).map((d) => d.batchKey))).toEqual(new Set([`batch-${batchId}`]));
  });

  it('a 409 for another body under the batch key sends the members alone, and their acceptance is flagged possible_duplicate', async () => {
    const ids = await expireHolds(db, `r409-${++label}`, 3);
    resend.queue(
      { status: 409, body: { statusCode: 409, name: 'invalid_idempotent_request', message: 'Same idempotency key used with a different request payload.' } },
      '/emails/batch',
    );
    await drain(resendWorker());
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent' && r.possible_duplicate && r.batch_id === null)).toBe(true);
    expect(resend.deliveries.every((d) => d.batchKey === undefined)).toBe(true);
  });

  it('a 409 while the first request with the key is in flight keeps the batch whole: resent under its key later, once, unflagged', async () => {
    const ids = await expireHolds(db, `rconc-${++label}`, 3);
    resend.queue(
      { status: 409, body: { statusCode: 409, name: 'concurrent_idempotent_requests', message: 'Same idempotency key used while original request is still in progress.' } },
      '/emails/batch',
    );
    const w = resendWorker();
    expect((await w.runOnce()).outcomes).toEqual({ failed: 3 });
    const bound = await rows(ids);
    expect(new Set(bound.map((r) => r.batch_id)).size).toBe(1);
    expect(bound[0]!.batch_id).not.toBeNull();
    await drain(w);
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    const mine = resend.deliveries.filter((d) => ids.includes(intentOf(d)));
    expect(mine).toHaveLength(3);
    expect(new Set(mine.map((d) => d.batchKey))).toEqual(new Set([`batch-${bound[0]!.batch_id}`]));
  });

  it('a round that resends one open batch on its one permit runs again at once: the next open batch and the singles behind it do not wait for a wake-up', async () => {
    // Four batches left open by lost answers (a killed worker's reclaimed
    // leases look the same), then four new intents. The lane below runs two
    // rounds side by side, so a round that stopped after its one batch would
    // leave the last batch and the singles to the next wake-up.
    resend.processingMs = 600;
    const batches: string[][] = [];
    for (const size of [4, 3, 2, 2]) {
      batches.push(await expireHolds(db, `rsat-${batches.length}-${++label}`, size));
      expect((await resendWorker().runOnce()).outcomes).toEqual({ failed: size });
    }
    await new Promise((r) => setTimeout(r, 700)); // the slow requests land at the stand-in
    resend.processingMs = 0;
    const singles = await expireHolds(db, `rsat-s-${label}`, 4);
    const all = [...batches.flat(), ...singles];
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() WHERE id = ANY ($1)`, [all]);

    // A round takes one permit (one request of up to 100 emails at the
    // default batch and concurrency), so it resends the oldest batch alone.
    const round = await resendWorker().runOnce();
    expect(round).toMatchObject({ leased: 4, saturated: true, outcomes: { accepted: 4 } });

    // The lane, polling only once a minute, sends the rest without being woken.
    const w = resendWorker({ pollIntervalMs: 60_000 });
    w.start();
    try {
      await expect
        .poll(async () => (await rows(all)).filter((r) => r.state === 'sent').length, { timeout: 5000, interval: 50 })
        .toBe(all.length);
    } finally {
      await w.stop();
    }
    expect((await rows(all)).every((r) => !r.possible_duplicate && r.batch_id === null)).toBe(true);
    const mine = resend.deliveries.filter((d) => all.includes(intentOf(d)));
    expect(mine.map(intentOf).sort()).toEqual([...all].sort());
  });

  it('singles planned beside a batch never outnumber the round\'s send slots: the requests past them are given back, due at once', async () => {
    const ids = await expireHolds(db, `rslots-${++label}`, 7);
    // Three that a refused batch could not tell from the email at fault: each goes alone.
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET send_alone = true WHERE id = ANY ($1)`, [ids.slice(0, 3)]);
    const before = resend.requests.length;
    // One send slot: one permit, a lease of up to 100 emails, planned as three singles and a batch of four.
    const w = resendWorker({ concurrency: 1 });
    const first = await w.runOnce();
    expect(first).toMatchObject({ outcomes: { accepted: 1, abandoned: 6 }, saturated: true }); // due again at once: the lane runs again
    expect(resend.requests.length - before).toBe(1);
    const given = await rows(ids);
    expect(given.filter((r) => r.state === 'pending')).toHaveLength(6);
    const { rows: leased } = await db.pool.query(`SELECT 1 FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) AND lease_token IS NOT NULL`, [ids]);
    expect(leased).toEqual([]);
    // The rest go one request a round, each email once and unflagged.
    const runs = await drain(w);
    expect(runs.every((run) => (run.outcomes.accepted ?? 0) <= 4)).toBe(true);
    expect((await rows(ids)).every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    expect(resend.requests.length - before).toBe(4);
  });

  it('past the key lifetime an open batch is closed and its members go alone, flagged', async () => {
    const ids = await expireHolds(db, `rold-${++label}`, 3);
    resend.processingMs = 600;
    const w = resendWorker();
    await w.runOnce();
    resend.processingMs = 0;
    // A day and more later: the batch's key is gone at Resend.
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_batches SET created_at = now() - interval '25 hours' WHERE open`);
    await drain(resendWorker());
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent' && r.possible_duplicate)).toBe(true);
    await new Promise((r) => setTimeout(r, 700)); // the slow first request lands before the next test
  });

  it('stop() after the lease and before the request gives the batch back at once; another worker sends it once', async () => {
    const ids = await expireHolds(db, `rstop-${++label}`, 5);
    let w: DeliveryWorker;
    const faults = new Faults(async (point) => {
      if (point === 'delivery.leased') void w.stop();
    });
    w = resendWorker({ faults });
    expect((await w.runOnce()).outcomes).toEqual({ abandoned: 5 });
    const given = await rows(ids);
    expect(given.every((r) => r.state === 'pending' && r.batch_id === null)).toBe(true);
    const { rows: leases } = await db.pool.query(`SELECT 1 FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) AND lease_token IS NOT NULL`, [ids]);
    expect(leases).toEqual([]);
    expect((await resendWorker().runOnce()).outcomes).toEqual({ accepted: 5 });
    // (An earlier test's slow request may land meanwhile: only this test's intents are counted.)
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
  });

  it('stop() while a batch is in flight waits for its answer and records every member', async () => {
    const ids = await expireHolds(db, `rfly-${++label}`, 5);
    resend.processingMs = 150;
    let w: DeliveryWorker;
    let stopped: Promise<void> | undefined;
    // stop() is called as the batch's request is about to leave.
    const faults = new Faults(async (point) => {
      if (point === 'delivery.batch') stopped = w.stop();
    });
    w = resendWorker({ faults });
    w.start();
    await expect.poll(() => stopped !== undefined, { timeout: 5000 }).toBe(true);
    await stopped;
    const after = await rows(ids);
    expect(after.every((r) => r.state === 'sent')).toBe(true);
    expect(resend.deliveries.map(intentOf).filter((id) => ids.includes(id))).toHaveLength(5);
  });

  it('batch: 1 turns batching off', async () => {
    const ids = await expireHolds(db, `rone-${++label}`, 3);
    const w = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      accounts: [{ name: 'default', gateway: new ResendGateway({ apiKey: resend.apiKey, baseUrl: resend.url }), batch: 1 }],
    });
    await drain(w);
    expect((await rows(ids)).every((r) => r.state === 'sent')).toBe(true);
    const mine = resend.deliveries.filter((d) => ids.includes(intentOf(d)));
    expect(mine).toHaveLength(3);
    expect(mine.every((d) => d.batchKey === undefined && d.idempotencyKey !== undefined)).toBe(true);
  });

  it('a batch above the provider maximum is refused with the field named', () => {
    expect(
      () => new DeliveryWorker({ pool: db.pool, schema: db.schema, accounts: [{ name: 'a', gateway: new ResendGateway({ apiKey: 'k' }), batch: 101 }] }),
    ).toThrow(/accounts\.a\.batch.*at most 100/);
  });
});

describe('Postmark batches', () => {
  it('mixed per-message codes give each member its own outcome, and the inactive recipient is suppressed', async () => {
    const ids = await expireHolds(db, `pmix-${++label}`, 4);
    postmark.scriptBatch({ 1: { ErrorCode: 406 }, 2: { ErrorCode: 429 }, 3: { ErrorCode: 300 } });
    const run = await postmarkWorker().runOnce();
    expect(run.outcomes).toEqual({ accepted: 1, rejected: 2, rate_limited: 1 });
    const { rows: order } = await db.pool.query<{ members: string[] }>(
      `SELECT members FROM ${ident(db.schema)}.email_batches WHERE provider = 'postmark' ORDER BY created_at DESC LIMIT 1`,
    );
    const [ok, inactive, limited, malformed] = order[0]!.members;
    const after = new Map((await rows(ids)).map((r) => [r.id, r]));
    expect(after.get(ok!)!.state).toBe('sent');
    expect(after.get(inactive!)!.state).toBe('rejected');
    expect(after.get(limited!)!.state).toBe('pending');
    expect(after.get(malformed!)!.state).toBe('rejected');
    const { rows: suppressed } = await db.pool.query(
      `SELECT s.reason FROM ${ident(db.schema)}.suppressions s JOIN ${ident(db.schema)}.email_outbox o ON s.address = lower(o.recipient) WHERE o.id = ANY ($1)`,
      [ids],
    );
    expect(suppressed).toEqual([{ reason: 'hard_bounce' }]);
    expect(postmark.outbound.map((m) => m.Metadata['intent_id'])).toEqual([ok]);
  });
});
