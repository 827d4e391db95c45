import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * confirm, cancel and extend through leasehold's API call the application's
 * LEASEHOLD_EXPIRE_HOOK in the change's own transaction (issue 41): the
 * function sees the hold's new state, and when it raises the request fails
 * with 409 hook_failed and nothing changes.
 */
const app = `hookapi_${randomBytes(4).toString('hex')}`;
let api: ApiHarness;

beforeAll(async () => {
  api = await apiHarness('hold_hook', { LEASEHOLD_EXPIRE_HOOK: `${app}.on_change`, LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS: '300' });
  const s = ident(api.db.schema);
  await api.db.pool.query(`CREATE SCHEMA ${ident(app)}`);
  await api.db.pool.query(`CREATE TABLE ${ident(app)}.calls (hold_id text, status text, expires_at timestamptz)`);
  await api.db.pool.query(
    `CREATE FUNCTION ${ident(app)}.on_change(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
     BEGIN
       IF EXISTS (SELECT 1 FROM unnest(ids) id WHERE id LIKE 'refuse-%') THEN
         RAISE EXCEPTION 'slot for % is already rebooked', ids[1] USING ERRCODE = 'P0001';
       END IF;
       IF EXISTS (SELECT 1 FROM unnest(ids) id WHERE id LIKE 'slow-%') THEN PERFORM pg_sleep(3); END IF;
       -- The function learns the new state from leasehold's rows.
       INSERT INTO ${ident(app)}.calls SELECT r.id, r.status, r.expires_at FROM ${s}.support_reservations r WHERE r.id = ANY (ids);
     END $$`,
  );
});
afterAll(async () => {
  await api.db.pool.query(`DROP SCHEMA IF EXISTS ${ident(app)} CASCADE`);
  await api.close();
});

const create = async (id: string) => {
  const res = await api.call('POST', '/v1/holds', { id, customerEmail: `${id}@example.com`, ttlSeconds: 600 });
  expect(res.statusCode).toBe(201);
};
const calls = async (id: string) =>
  (await api.db.pool.query<{ status: string }>(`SELECT status FROM ${ident(app)}.calls WHERE hold_id = $1`, [id])).rows.map((r) => r.status);
const statusOf = async (id: string) => (await api.call('GET', `/v1/holds/${id}`)).json().hold.status as string;

describe('the expiry hook on changes made through the API', () => {
  it('confirm, cancel and extend each call it in their transaction, after the change', async () => {
    await create('c-1');
    await create('x-1');
    await create('e-1');
    expect((await api.call('POST', '/v1/holds/c-1/confirm')).statusCode).toBe(200);
    expect((await api.call('POST', '/v1/holds/x-1/cancel')).statusCode).toBe(200);
    expect((await api.call('POST', '/v1/holds/e-1/extend', { ttlSeconds: 1200 })).statusCode).toBe(200);
    expect(await calls('c-1')).toEqual(['confirmed']);
    expect(await calls('x-1')).toEqual(['cancelled']);
    expect(await calls('e-1')).toEqual(['held']);
    // Creating a hold is not a change the hook is told of.
    expect(await calls('nothing')).toEqual([]);
  });

  it('a raising hook fails the request with 409 hook_failed and the database message, and the hold is unchanged', async () => {
    await create('refuse-1');
    const before = (await api.call('GET', '/v1/holds/refuse-1')).json().hold.expiresAt as string;
    for (const [path, body] of [['confirm', undefined], ['cancel', undefined], ['extend', { ttlSeconds: 1200 }]] as const) {
      const res = await api.call('POST', `/v1/holds/refuse-1/${path}`, body);
      expect(res.statusCode, path).toBe(409);
      expect(res.json().error.code).toBe('hook_failed');
      expect(res.json().error.message).toContain('slot for refuse-1 is already rebooked');
      expect(res.json().error.message).toContain(`${app}.on_change`);
      expect(await statusOf('refuse-1')).toBe('held');
    }
    expect((await api.call('GET', '/v1/holds/refuse-1')).json().hold.expiresAt).toBe(before);
    expect(await calls('refuse-1')).toEqual([]);
  });

  it('a hook slower than LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS fails the request the same way', async () => {
    await create('slow-1');
    const res = await api.call('POST', '/v1/holds/slow-1/confirm');
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('hook_failed');
    expect(res.json().error.message).toMatch(/statement_timeout|57014/);
    expect(await statusOf('slow-1')).toBe('held');
  });
});
