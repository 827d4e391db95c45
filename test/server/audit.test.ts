import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { pauseDelivery, setRateLimit } from '../../src/client/functions.js';
import { Pruner } from '../../src/retention/prune.js';
import { DEFAULT_RETENTION } from '../../src/model/retention-policy.js';
import { auditList } from '../../src/tables/audit-log.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { accessApp, TOKENS, type AccessApp } from '../helpers/access.js';

let db: TestDatabase;
let api: AccessApp;
beforeAll(async () => {
  db = await testDatabase('audit');
  api = await accessApp(db);
  const s = ident(db.schema);
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, metadata) VALUES
       ('audit-dead', 'dead@example.com', now() - interval '1 second', '{}'), ('audit-pending', 'pending@example.com', now() - interval '1 second', '{}')`,
  );
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now() WHERE id = 'reservation-expired:audit-dead'`);
});
afterAll(async () => {
  await api.app.close();
  await db.close();
});

/**
 * A successful call of every route that changes something, in an order
 * that makes each succeed (with what it needs set up first). A new
 * mutating route without `unaudited` in its access() and without an entry
 * here fails the test below.
 */
const CHANGES: Record<string, { url: string; body?: unknown; setup?: () => Promise<unknown> }> = {
  'POST /v1/delivery/pause': { url: '/v1/delivery/pause', body: { reason: 'audit test' } },
  'POST /v1/delivery/resume': { url: '/v1/delivery/resume' },
  'PUT /v1/rate-limit': { url: '/v1/rate-limit', body: { perSecond: 4, burst: 8 } },
  'PUT /v1/accounts/:name/rate-limit': { url: '/v1/accounts/default/rate-limit', body: { perSecond: 5 } },
  'POST /v1/accounts/:name/pause': { url: '/v1/accounts/default/pause', body: { reason: 'audit test' } },
  'POST /v1/accounts/:name/resume': { url: '/v1/accounts/default/resume' },
  'POST /v1/intents/:id/replay': { url: '/v1/intents/reservation-expired:audit-dead/replay' },
  'POST /v1/webhook-deliveries/:id/replay': {
    url: '/v1/webhook-deliveries/msg_audit_dead/replay',
    setup: () =>
      db.pool.query(
        `INSERT INTO ${ident(db.schema)}.webhook_events (id, endpoint, type, payload, occurred_at, state, finished_at)
         VALUES ('msg_audit_dead', 'app', 'hold.expired', '{}', now(), 'dead', now())`,
      ),
  },
  'POST /v1/intents/:id/move': { url: '/v1/intents/reservation-expired:audit-pending/move', body: { account: 'default' } },
  'POST /v1/suppressions': { url: '/v1/suppressions', body: { address: 'Secret.Person@example.com' } },
  'DELETE /v1/suppressions/:address': { url: '/v1/suppressions/secret.person%40example.com' },
  'POST /v1/erasures': { url: '/v1/erasures', body: { address: 'dead@example.com' } },
  'POST /v1/retention/prune': { url: '/v1/retention/prune', body: {} },
  'PUT /v1/tenants/:tenant': { url: '/v1/tenants/acme', body: { weight: 3 } },
  'DELETE /v1/tenants/:tenant': { url: '/v1/tenants/acme' },
  'POST /v1/tenants/:tenant/pause': { url: '/v1/tenants/acme/pause', body: { reason: 'audit test' } },
  'POST /v1/tenants/:tenant/resume': { url: '/v1/tenants/acme/resume' },
};

describe('the audit log', () => {
  it('has an entry, with the request id, for every change a mutating route makes (generated from the route list)', async () => {
    const mutating = api.routes.filter((r) => r.method !== 'GET');
    expect(mutating.length).toBeGreaterThan(15);
    const exempt = mutating.filter((r) => r.access!.unaudited).map((r) => `${r.method} ${r.url}`);
    expect(exempt.every((key) => key.startsWith('POST /v1/holds')), `only hold routes are application traffic: ${exempt.join(', ')}`).toBe(true);
    const audited = mutating.filter((r) => !r.access!.unaudited).map((r) => `${r.method} ${r.url}`);
    expect(audited.filter((key) => !CHANGES[key]), 'mutating routes with no successful call in CHANGES').toEqual([]);
    for (const key of Object.keys(CHANGES)) {
      if (!audited.includes(key)) continue;
      const change = CHANGES[key]!;
      await change.setup?.();
      const res = await api.call(TOKENS.admin, key.split(' ')[0] as 'POST', change.url, change.body, { 'x-request-id': `audit-${key.replace(/[^a-z]+/gi, '-')}` });
      expect(res.statusCode, `${key}: ${res.body}`).toBeLessThan(300);
      const requestId = res.headers['x-request-id'] as string;
      expect(requestId).toBe(`audit-${key.replace(/[^a-z]+/gi, '-')}`);
      const { rows } = await db.pool.query(`SELECT actor, action FROM ${ident(db.schema)}.audit_log WHERE request_id = $1`, [requestId]);
      expect(rows.length, `${key} wrote no audit entry`).toBeGreaterThanOrEqual(1);
      expect(rows[0].actor).toBe('boss');
    }
  });

  it('keeps the values before and after, and never an address', async () => {
    const rate = (await auditList(db.pool, db.schema, { limit: 10, action: 'rate_limit.set' })).entries;
    expect(rate.map((e) => [e.target, e.before, e.after])).toEqual([
      ['default', { perSecond: 4, burst: 8 }, { perSecond: 5, burst: 8 }],
      ['default', { perSecond: 10, burst: 10 }, { perSecond: 4, burst: 8 }],
    ]);
    const pause = (await auditList(db.pool, db.schema, { limit: 1, action: 'delivery.pause' })).entries[0]!;
    expect(pause).toMatchObject({ actor: 'boss', target: 'fleet', before: { paused: false }, after: { paused: true, reason: 'audit test' } });
    const all = JSON.stringify(await db.pool.query(`SELECT * FROM ${ident(db.schema)}.audit_log`).then((r) => r.rows));
    expect(all).not.toMatch(/@example\.com/i);
    const erasure = (await auditList(db.pool, db.schema, { limit: 1, action: 'erasure.address' })).entries[0]!;
    expect(erasure.detail).toMatchObject({ counts: expect.any(Object) });
  });

  it('writes no entry for a change that did not happen (same transaction)', async () => {
    const before = (await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.audit_log`)).rows[0].n;
    expect((await api.call(TOKENS.admin, 'POST', '/v1/tenants/nobody/resume')).statusCode).toBe(404);
    expect((await api.call(TOKENS.admin, 'POST', '/v1/intents/reservation-expired:audit-pending/replay')).statusCode).toBe(409);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.audit_log`)).rows[0].n).toBe(before);
  });

  it('is read with GET /v1/audit?since=&action=&cursor= (newest first) and refuses a bad filter', async () => {
    const first = (await api.call(TOKENS.read, 'GET', '/v1/audit?limit=3')).json();
    expect(first.entries).toHaveLength(3);
    const next = (await api.call(TOKENS.read, 'GET', `/v1/audit?limit=3&cursor=${first.nextCursor}`)).json();
    expect(next.entries[0].id).toBeLessThan(first.entries[2].id);
    const pauses = (await api.call(TOKENS.read, 'GET', '/v1/audit?action=tenant.pause')).json();
    expect(pauses.entries.map((e: { target: string }) => e.target)).toEqual(['acme']);
    const later = (await api.call(TOKENS.read, 'GET', `/v1/audit?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).json();
    expect(later.entries).toEqual([]);
    const bad = await api.call(TOKENS.read, 'GET', '/v1/audit?action=drop.tables');
    expect([bad.statusCode, bad.json().error.field]).toEqual([400, 'action']);
  });

  it('names a library caller: library, or library:<actor>', async () => {
    await pauseDelivery(db.pool, { reason: 'from a job' }, { schema: db.schema, actor: 'billing-job' });
    await setRateLimit(db.pool, { perSecond: 6 }, { schema: db.schema });
    const [rate, pause] = [
      (await auditList(db.pool, db.schema, { limit: 1, action: 'rate_limit.set' })).entries[0]!,
      (await auditList(db.pool, db.schema, { limit: 1, action: 'delivery.pause' })).entries[0]!,
    ];
    expect([pause.actor, rate.actor]).toEqual(['library:billing-job', 'library']);
  });

  it('is pruned by age on its own retention (LEASEHOLD_AUDIT_RETENTION_DAYS), not the stories\'', async () => {
    const s = ident(db.schema);
    await db.pool.query(`UPDATE ${s}.audit_log SET at = now() - interval '400 days' WHERE action = 'delivery.resume'`);
    await db.pool.query(`UPDATE ${s}.audit_log SET at = now() - interval '100 days' WHERE action = 'tenant.resume'`);
    const run = await new Pruner({ pool: db.pool, schema: db.schema, policy: { ...DEFAULT_RETENTION, retentionDays: null, erasePiiAfterDays: null } }).runUntilDone();
    expect(run.pruned).toEqual({ audit_log: 1 });
    expect((await auditList(db.pool, db.schema, { limit: 10, action: 'tenant.resume' })).entries).toHaveLength(1);
    await new Pruner({ pool: db.pool, schema: db.schema, policy: { ...DEFAULT_RETENTION, auditRetentionDays: 30 } }).runUntilDone();
    expect((await auditList(db.pool, db.schema, { limit: 10, action: 'tenant.resume' })).entries).toHaveLength(0);
    const kept = await new Pruner({ pool: db.pool, schema: db.schema, policy: { ...DEFAULT_RETENTION, auditRetentionDays: null } }).runUntilDone();
    expect(kept.pruned.audit_log).toBeUndefined();
  });
});
