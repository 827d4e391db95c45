import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * The Tenants issue's scenario on the delivery lane: tenant A with 2,000
 * emails due at once and tenant B with 20 due a little later. B does not
 * wait behind A's backlog, and A has the whole rate whenever B has nothing
 * due. Rounds are driven one by one (runOnce) and counted in sends.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tenant_delivery');
});
afterAll(() => db.close());

let seq = 0;
async function intents(tenant: string, count: number, dueInS: number): Promise<void> {
  const s = ident(db.schema);
  const prefix = `${tenant}-${++seq}`;
  await db.pool.query(
    `WITH h AS (
       INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
       SELECT $4 || '-' || i, 'c@example.com', clock_timestamp() + make_interval(secs => $2), 'expired',
              clock_timestamp() + make_interval(secs => $2), 'x', $1
         FROM generate_series(1, $3) i RETURNING id, expires_at)
     INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
     SELECT 'reservation-expired:' || h.id, h.id, 'c@example.com', 'reservation-expired', 'pending', h.expires_at, h.expires_at, $1 FROM h`,
    [tenant, dueInS, count, prefix],
  );
}

describe('two tenants on one account', () => {
  it("B's 20 emails go out in the first 40 sends after they fall due beside A's 2,000, and A has every send again once B has none due", async () => {
    // Counted in sends, not seconds, so a slow machine cannot fail it: at the
    // scenario's 20 emails/s, 40 sends are 2 s. Oldest-first, B would wait for
    // the rest of A's backlog (1,900 sends, 95 s).
    await rateLimiterSet(db.pool, db.schema, { perSecond: 100_000, burst: 100_000 });
    await intents('a', 2000, -10);
    const gateway = new ScriptedGateway();
    const w = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, batchSize: 20, concurrency: 20 });
    for (let i = 0; i < 5; i++) expect((await w.runOnce()).leased).toBe(20);
    expect(gateway.calls).toHaveLength(100);

    await intents('b', 20, 0); // B falls due while A has 1,900 left
    const rounds: string[][] = [];
    for (let i = 0; i < 6; i++) {
      const from = gateway.calls.length;
      await w.runOnce();
      rounds.push(gateway.calls.slice(from).map((c) => c.message.intentId.split(':')[1]!.split('-')[0]!));
    }
    const order = rounds.flat();
    expect(order.filter((t) => t === 'b')).toHaveLength(20);
    expect(order.lastIndexOf('b')).toBeLessThan(40);
    // Each round while both have email due gives each tenant a share; after B's last, A has the whole round.
    expect(rounds[0]!.filter((t) => t === 'b').length).toBeGreaterThanOrEqual(5);
    expect(rounds[0]!.filter((t) => t === 'a').length).toBeGreaterThanOrEqual(5);
    const afterB = rounds.slice(rounds.findIndex((r, i) => !rounds.slice(i).flat().includes('b')));
    expect(afterB.length).toBeGreaterThanOrEqual(3);
    for (const round of afterB) expect(round).toEqual(Array(20).fill('a'));
  });

  it("a tenant's policy from and replyTo replace the template's sender on its emails only", async () => {
    const s = ident(db.schema);
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
    await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
    await db.pool.query(
      `INSERT INTO ${s}.tenant_policies (tenant, from_address, reply_to) VALUES ('acme', 'Acme Support <help@acme.example>', 'desk@acme.example')`,
    );
    await intents('acme', 2, 0);
    await intents('globex', 2, 0);
    const gateway = new ScriptedGateway();
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, from: 'Shop <shop@example.com>' }).runOnce();
    expect(run.outcomes).toEqual({ accepted: 4 });
    const byTenant = new Map(gateway.calls.map((c) => [c.message.intentId.includes('acme') ? 'acme' : 'globex', c.message]));
    expect(byTenant.get('acme')).toMatchObject({ from: 'Acme Support <help@acme.example>', replyTo: 'desk@acme.example' });
    expect(byTenant.get('globex')!.from).toBe('Shop <shop@example.com>');
    expect(byTenant.get('globex')!.replyTo).toBeUndefined();
  });

  it('a tenant routed to an account sends only through it, in failover or not, and does not fail over when it pauses', async () => {
    const s = ident(db.schema);
    await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
    await db.pool.query(`INSERT INTO ${s}.tenant_policies (tenant, account) VALUES ('own', 'byo'), ('second', 'backup')`);
    await intents('own', 3, 0);
    await intents('second', 3, 0);
    await intents('plain', 3, 0);
    const gateways = { primary: new ScriptedGateway(), backup: new ScriptedGateway(), byo: new ScriptedGateway() };
    const worker = () =>
      new DeliveryWorker({
        pool: db.pool,
        schema: db.schema,
        accounts: Object.entries(gateways).map(([name, gateway]) => ({ name, gateway })),
        failover: ['primary', 'backup'],
        initialRate: { perSecond: 1000, burst: 1000 },
      });
    const w = worker();
    for (let i = 0; i < 5; i++) await w.runOnce();
    const tenantsOf = (g: ScriptedGateway) => [...new Set(g.calls.map((c) => c.message.intentId.split(':')[1]!.split('-')[0]))].sort();
    expect(tenantsOf(gateways.primary)).toEqual(['plain']);
    expect(tenantsOf(gateways.backup)).toEqual(['second']);
    expect(tenantsOf(gateways.byo)).toEqual(['own']);
    const { rows } = await db.pool.query<{ tenant: string; sent_account: string }>(
      `SELECT DISTINCT tenant, sent_account FROM ${s}.email_outbox WHERE tenant IN ('own', 'second', 'plain') ORDER BY 1`,
    );
    expect(rows).toEqual([
      { tenant: 'own', sent_account: 'byo' },
      { tenant: 'plain', sent_account: 'primary' },
      { tenant: 'second', sent_account: 'backup' },
    ]);

    // Its own account pauses (a bad key): the tenant's email waits for it, it does not go through the others.
    const paused = new ScriptedGateway({ kind: 'paused', reason: 'invalid key' });
    await intents('own', 2, 0);
    const w2 = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      accounts: [
        { name: 'primary', gateway: gateways.primary },
        { name: 'backup', gateway: gateways.backup },
        { name: 'byo', gateway: paused },
      ],
      failover: ['primary', 'backup'],
    });
    const before = gateways.primary.calls.length + gateways.backup.calls.length;
    for (let i = 0; i < 4; i++) await w2.runOnce();
    expect(gateways.primary.calls.length + gateways.backup.calls.length).toBe(before);
    const { rows: waiting } = await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE tenant = 'own' AND state = 'pending'`);
    expect(waiting[0].n).toBe(2);
  });
});
