import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { getHold } from '../../src/holds/holds.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { accessApp, TOKENS, type AccessApp } from '../helpers/access.js';

let db: TestDatabase;
let api: AccessApp;
beforeAll(async () => {
  db = await testDatabase('access_tenants');
  api = await accessApp(db);
  const s = ident(db.schema);
  // A hold and an intent of each tenant.
  for (const tenant of ['acme', 'globex']) {
    await db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, metadata, tenant) VALUES ($1, 'c@example.com', now() + interval '1 hour', '{}', $2), ($3, 'c@example.com', now() - interval '1 second', '{}', $2)`,
      [`${tenant}-held`, tenant, `${tenant}-due`],
    );
  }
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now() WHERE tenant = 'globex'`);
});
afterAll(async () => {
  await api.app.close();
  await db.close();
});

const acme = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) => api.call(TOKENS.acme, method, url, body);

describe('a token limited to tenants', () => {
  it("answers another tenant's hold and intent exactly as a missing one: 404, never 403", async () => {
    for (const [url, method] of [
      ['/v1/holds/globex-held', 'GET'],
      ['/v1/holds/globex-held/confirm', 'POST'],
      ['/v1/holds/globex-held/cancel', 'POST'],
      ['/v1/intents/reservation-expired:globex-due', 'GET'],
      ['/v1/intents/reservation-expired:globex-due/replay', 'POST'],
      ['/v1/intents/reservation-expired:globex-due/move', 'POST'],
    ] as const) {
      const missing = url.replace('globex', 'nobody');
      const body = url.endsWith('/move') ? { account: 'default' } : undefined;
      const other = await acme(method, url, body);
      const none = await acme(method, missing, body);
      expect(other.statusCode, url).toBe(404);
      expect(other.json().error.code).toBe(none.json().error.code);
      expect(other.json().error.message).toBe(none.json().error.message.replace('nobody', 'globex'));
    }
    // Nothing of globex's changed.
    expect((await getHold(db.pool, 'globex-held', { schema: db.schema }))?.status).toBe('held');
    const intent = await api.call(TOKENS.admin, 'GET', '/v1/intents/reservation-expired:globex-due');
    expect(intent.json()).toMatchObject({ state: 'dead', replays: 0 });
  });

  it('reaches its own tenant: reads, confirms, creates (the tenant defaulted), lists only its rows', async () => {
    expect((await acme('GET', '/v1/holds/acme-held')).statusCode).toBe(200);
    expect((await acme('GET', '/v1/intents/reservation-expired:acme-due')).json().tenant).toBe('acme');
    const created = await acme('POST', '/v1/holds', { id: 'acme-new', customerEmail: 'n@example.com', ttlSeconds: 600 });
    expect([created.statusCode, created.json().tenant]).toEqual([201, 'acme']);
    expect((await acme('POST', '/v1/holds/acme-new/confirm')).json().status).toBe('confirmed');

    const holds = (await acme('GET', '/v1/holds')).json().holds as Array<{ tenant: string }>;
    expect(holds.length).toBeGreaterThan(0);
    expect(new Set(holds.map((h) => h.tenant))).toEqual(new Set(['acme']));
    expect((await acme('GET', '/v1/holds?tenant=globex')).json()).toEqual({ holds: [], nextCursor: null });
    expect((await acme('GET', '/v1/intents?tenant=globex')).json()).toEqual({ intents: [], nextCursor: null });
    const intents = (await acme('GET', '/v1/intents')).json().intents as Array<{ tenant: string }>;
    expect(new Set(intents.map((i) => i.tenant))).toEqual(new Set(['acme']));
  });

  it("cannot create a hold for another tenant (403 naming tenant), nor reach fleet-wide routes", async () => {
    const other = await acme('POST', '/v1/holds', { customerEmail: 'n@example.com', ttlSeconds: 600, tenant: 'globex' });
    expect([other.statusCode, other.json().error.field]).toEqual([403, 'tenant']);
    for (const [method, url] of [
      ['POST', '/v1/delivery/pause'],
      ['PUT', '/v1/rate-limit'],
      ['GET', '/v1/status'],
      ['GET', '/v1/suppressions'],
      ['GET', '/v1/audit'],
    ] as const) {
      const res = await acme(method, url, method === 'PUT' ? { perSecond: 1 } : undefined);
      expect(res.statusCode, url).toBe(403);
      expect(res.json().error.message).toMatch(/limited to tenants acme/);
    }
  });

  it('pauses and resumes its own tenant; another tenant is a 404', async () => {
    expect((await acme('POST', '/v1/tenants/acme/pause', { reason: 'our maintenance' })).statusCode).toBe(200);
    expect((await acme('POST', '/v1/tenants/acme/resume')).statusCode).toBe(200);
    expect((await acme('POST', '/v1/tenants/globex/pause', {})).statusCode).toBe(404);
    expect((await acme('GET', '/v1/tenants/globex')).statusCode).toBe(404);
  });

  it('describes itself: GET /v1/token', async () => {
    expect((await acme('GET', '/v1/token')).json()).toEqual({ name: 'acme-app', role: 'operate', tenants: ['acme'] });
  });
});
