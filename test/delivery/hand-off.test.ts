import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { ident } from '../../src/db/pool.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { SendResult } from '../../src/providers/gateway.js';
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
 * nothing: only a hand-off can make it send.
 */
function deafWorker(gateway: ScriptedGateway, extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {}): DeliveryWorker {
  return new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, pollIntervalMs: 600_000, from: 'Support <support@leasehold.test>', logger: silentLogger, ...extra });
}

/** Started, and its first round (which found nothing) over: its loop sleeps, and it offers hand-offs (the one asked for here is given back). */
async function started(worker: DeliveryWorker): Promise<DeliveryWorker> {
  worker.start();
  await until(() => {
    const ticket = worker.handOff();
    ticket?.deliver(null);
    return ticket !== undefined;
  }, 'the delivery loop to sleep');
  return worker;
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
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const gateway = new ScriptedGateway(async (): Promise<SendResult> => {
      await gate;
      return { kind: 'accepted', receipt: 'late' };
    });
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

  it('is offered only by a running worker with a round loop asleep, and gives its slots back when nothing is handed', async () => {
    const worker = deafWorker(new ScriptedGateway(), { concurrency: 7, batchSize: 5 });
    expect(worker.handOff()).toBeUndefined();
    await started(worker);
    // Both round loops asleep (concurrency above the batch runs two): every slot free.
    await until(() => {
      const probe = worker.handOff();
      probe?.deliver(null);
      return probe?.lease.limit === 5;
    }, 'both loops asleep');
    const ticket = worker.handOff()!;
    // Slots for one round: the batch size, within the free slots.
    expect(ticket.lease).toMatchObject({ account: 'default', provider: 'scripted', limit: 5 });
    const rest = worker.handOff()!;
    expect(rest.lease.limit).toBe(2);
    expect(worker.handOff()).toBeUndefined();
    ticket.deliver(null);
    rest.deliver(null);
    const again = worker.handOff();
    again?.deliver(null);
    expect(again?.lease.limit).toBe(5);
    await worker.stop();
    expect(worker.handOff()).toBeUndefined();
  });

  it('is not offered by a worker of several accounts, or of one that sends keyed batches', async () => {
    const two = deafWorker(new ScriptedGateway(), {
      gateway: undefined,
      accounts: [
        { name: 'a', gateway: new ScriptedGateway() },
        { name: 'b', gateway: new ScriptedGateway() },
      ],
    });
    const keyed = new ScriptedGateway(undefined, true);
    Object.assign(keyed, { maxBatch: 10, batchIdempotent: true, sendBatch: async () => [] });
    const batching = deafWorker(keyed);
    for (const worker of [two, batching]) {
      worker.start();
      await new Promise((r) => setTimeout(r, 100));
      expect(worker.handOff()).toBeUndefined();
      await worker.stop();
    }
  });
});
