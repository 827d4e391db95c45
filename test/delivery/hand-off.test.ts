import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { ident } from '../../src/db/pool.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { BatchMember, BatchResult, SendResult } from '../../src/providers/gateway.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { suppressionsAdd } from '../../src/tables/suppressions.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * The hand-off between the lanes of one process (delivery/hand-off.ts):
 * the expiry statement leases a batch's intents to the delivery worker
 * beside it, which sends them with no lease statement or wake-up of its own.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('hand_off_lanes');
  s = ident(db.schema);
});
afterAll(() => db.close());
beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${s}.support_reservations, ${s}.suppressions CASCADE`);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
});

const until = async (check: () => boolean | Promise<boolean>, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/**
 * A delivery worker that never polls in a test's time and is woken by
 * nothing: only a hand-off can make it send. One round loop (its
 * concurrency is its batch), so that once its first round has ended no
 * round holds a slot.
 */
function deafWorker(gateway: ScriptedGateway, extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {}): DeliveryWorker {
  return new DeliveryWorker({
    pool: db.pool,
    schema: db.schema,
    gateway,
    pollIntervalMs: 600_000,
    from: 'Support <support@leasehold.test>',
    logger: silentLogger,
    concurrency: 50,
    batchSize: 50,
    ...extra,
  });
}

/** Started, and its first round (which found nothing) over: its loop sleeps, every slot is free, and it offers hand-offs. */
async function started(worker: DeliveryWorker): Promise<DeliveryWorker> {
  worker.start();
  const startedAt = Date.now();
  // Its last round's end (the lane's round age counts from it) falls after the start once the first round is over.
  await until(() => {
    // One clock reading for both: read twice, a pause between them looked like a round's end.
    const now = Date.now();
    const age = worker.lastRoundAgeSeconds(now);
    return age !== undefined && now - age * 1000 > startedAt + 0.5;
  }, 'the first round to end');
  return worker;
}

/** A provider that accepts every send once `open()` is called, and holds each until then. */
function gatedGateway(): { gateway: ScriptedGateway; open: () => void } {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const gateway = new ScriptedGateway(async (): Promise<SendResult> => {
    await gate;
    return { kind: 'accepted', receipt: 'held' };
  });
  return { gateway, open };
}

/** A provider with a batch API that deduplicates batches on their key (as Resend does), accepting every member. */
class BatchingGateway extends ScriptedGateway {
  readonly maxBatch = 10;
  readonly batchIdempotent = true;
  readonly batchKeyLifetimeMs = 86_400_000;
  readonly batches: number[] = [];
  constructor() {
    super(undefined, true);
  }
  async sendBatch(members: BatchMember[]): Promise<BatchResult> {
    this.batches.push(members.length);
    return { results: members.map((m) => ({ kind: 'accepted' as const, receipt: `batch-${m.message.intentId}` })) };
  }
}

const leased = async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE lease_token IS NOT NULL`)).rows[0]!.n;

describe('the hand-off', () => {
  it('sends a batch from the expiry commit with no wake-up and no lease of the delivery lane', async () => {
    const gateway = new ScriptedGateway();
    const delivery = await started(deafWorker(gateway));
    try {
      // Without it: the intents are created pending, and nothing wakes the worker.
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'plain' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
      expect(await leased()).toBe(0);
      // (Pending and due, they would also stop the next batch's hand-off: older email goes first.)
      await db.pool.query(`TRUNCATE ${s}.support_reservations CASCADE`);

      await insertDueHolds(db.pool, db.schema, 3, { prefix: 'handed' });
      let woken = 0;
      const metrics = createMetrics();
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery, metrics, onIntentsCommitted: () => void woken++ }).runOnce();
      // Its own delivery worker has them already: nothing to wake, three counted.
      expect(woken).toBe(0);
      expect((await metrics.emailsHandedOff.get()).values[0]?.value).toBe(3);
      await until(async () => (await countBy(db.pool, db.schema, 'email_outbox', 'state'))['sent'] === 3, 'the handed intents to be sent');
      expect(gateway.calls.map((c) => c.message.holdId).sort()).toEqual(['handed-0', 'handed-1', 'handed-2']);
      expect(gateway.calls.every((c) => c.context.attempt === 1 && !c.context.previousOutcomeUnknown)).toBe(true);
      expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ sent: 3 });
      // Each sent once, under the lease the expiry statement wrote: one attempt each, recorded.
      const { rows } = await db.pool.query<{ n: number; sent: number }>(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE outcome = 'accepted')::int AS sent FROM ${s}.email_attempts WHERE intent_id LIKE '%handed%'`,
      );
      expect(rows[0]).toEqual({ n: 3, sent: 3 });
    } finally {
      await delivery.stop();
    }
  });

  it('rejects a suppressed recipient of a handed batch without calling the provider', async () => {
    const gateway = new ScriptedGateway();
    const delivery = await started(deafWorker(gateway));
    try {
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'sup' });
      await suppressionsAdd(db.pool, db.schema, [{ address: 'customer+sup-0@example.com', reason: 'hard_bounce', detail: null, provider: null }]);
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery }).runOnce();
      await until(async () => Object.values(await countBy(db.pool, db.schema, 'email_outbox', 'state')).reduce((a, b) => a + b, 0) === 2 && (await leased()) === 0, 'both recorded');
      expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ rejected: 1, sent: 1 });
      expect(gateway.calls.map((c) => c.message.holdId)).toEqual(['sup-1']);
    } finally {
      await delivery.stop();
    }
  });

  it('stop() waits for a hand-off\'s sends and records them', async () => {
    const { gateway, open } = gatedGateway();
    const delivery = await started(deafWorker(gateway));
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'slow' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery }).runOnce();
    await until(() => gateway.calls.length === 1, 'the send to begin');
    let stopped = false;
    const stopping = delivery.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    open();
    await stopping;
    expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ sent: 1 });
  });

  it('is offered only by a running worker with a slot free, and gives its slots back when nothing is handed', async () => {
    // Concurrency equal to the batch: one round loop, asleep for the whole test once started.
    const worker = deafWorker(new ScriptedGateway(), { concurrency: 7, batchSize: 7 });
    expect(worker.handOff()).toBeUndefined();
    await started(worker);
    const ticket = worker.handOff()!;
    // Slots for one round: the batch size, here every slot.
    expect(ticket.lease).toMatchObject({ account: 'default', provider: 'scripted', limit: 7, emailsPerPermit: 1 });
    expect(worker.handOff()).toBeUndefined();
    ticket.deliver(null);
    const again = worker.handOff();
    again?.deliver(null);
    expect(again?.lease.limit).toBe(7);
    await worker.stop();
    expect(worker.handOff()).toBeUndefined();
  });

  it('is offered while a round of its own is in flight: an older email that round leased does not stop the hand-off, one still unleased does', async () => {
    const { gateway, open } = gatedGateway();
    const delivery = await started(deafWorker(gateway, { concurrency: 7, batchSize: 7 }));
    try {
      // An email that was not handed: pending until a round of the worker's own leases it.
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'older' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
      // Still unleased, it goes first: the statement hands nothing off.
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'early' });
      const metrics = createMetrics();
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery, metrics }).runOnce();
      expect((await metrics.emailsHandedOff.get()).values[0]?.value ?? 0).toBe(0);
      // A round leases both and waits on the provider: the worker's one loop is awake.
      delivery.wake();
      await until(() => gateway.calls.length === 2, 'the round to send the older emails');
      expect(await leased()).toBe(2);
      // Nothing due is unleased now: the next batch is handed off beside the round in flight.
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'beside' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery, metrics }).runOnce();
      expect((await metrics.emailsHandedOff.get()).values[0]?.value).toBe(2);
      await until(() => gateway.calls.length === 4, 'the handed batch to be sent');
      open();
      await until(async () => (await countBy(db.pool, db.schema, 'email_outbox', 'state'))['sent'] === 4, 'every email to be recorded sent');
    } finally {
      open();
      await delivery.stop();
    }
  });

  it('sends a handed batch as one request on an account that sends keyed batches, a permit per request', async () => {
    const gateway = new BatchingGateway();
    const delivery = await started(deafWorker(gateway));
    try {
      await insertDueHolds(db.pool, db.schema, 3, { prefix: 'keyed' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: delivery }).runOnce();
      await until(async () => (await countBy(db.pool, db.schema, 'email_outbox', 'state'))['sent'] === 3, 'the batch to be sent');
      expect(gateway.batches).toEqual([3]);
      expect(gateway.calls).toEqual([]);
      // Recorded as the lane's own batches are: one batch, its members bound to it until settled.
      const { rows } = await db.pool.query<{ n: number }>(`SELECT count(DISTINCT batch_id)::int AS n FROM ${s}.email_attempts WHERE batch_id IS NOT NULL`);
      expect(rows[0]!.n).toBe(1);
    } finally {
      await delivery.stop();
    }
  });

  it('is not asked for by an expiry worker behind a full batch (a backlog), and asked again after a short one', async () => {
    const asked: number[] = [];
    let runs = 0;
    const target = {
      handOff: () => {
        asked.push(runs);
        return undefined;
      },
    };
    await insertDueHolds(db.pool, db.schema, 5, { prefix: 'backlog' });
    const expiry = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 2, handOff: target });
    for (; runs < 4; runs++) await expiry.runOnce();
    // Runs 0 and 1 are full (2 of 5, 2 of 3); run 2 takes the last one; run 3 finds none.
    expect(asked).toEqual([0, 3]);
  });

  it('is not offered by a worker of several accounts', async () => {
    const two = deafWorker(new ScriptedGateway(), {
      gateway: undefined,
      accounts: [
        { name: 'a', gateway: new ScriptedGateway() },
        { name: 'b', gateway: new ScriptedGateway() },
      ],
    });
    two.start();
    await new Promise((r) => setTimeout(r, 100));
    expect(two.handOff()).toBeUndefined();
    await two.stop();
  });
});
