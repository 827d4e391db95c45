import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/** A tenant on every hold (issue 25, part 1): on the API, carried to the intent, and as a listing filter. */
let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_tenants');
});
afterAll(() => h.close());

/** Backdate the holds so they are due, and run one expiry batch: time is moved, not waited for. */
async function expire(ids: string[]): Promise<void> {
  await h.db.pool.query(`UPDATE ${ident(h.db.schema)}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = ANY ($1)`, [ids]);
  await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
}

/** Every id of a listing, page by page with `limit`, following nextCursor to the end. */
async function allPages(path: string, key: 'holds' | 'intents', limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const url: string = `${path}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await h.call('GET', url);
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json() as Record<string, Array<{ id: string; tenant: string }>> & { nextCursor: string | null };
    ids.push(...page[key]!.map((row) => row.id));
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor && pages < 20);
  return { ids, pages };
}

describe('POST /v1/holds with a tenant', () => {
  it("stores the tenant and answers it; without one the hold is the empty tenant's", async () => {
    const withTenant = await h.call('POST', '/v1/holds', { id: 'acme-slot', customerEmail: 'a@example.com', ttlSeconds: 600, tenant: 'acme' });
    expect(withTenant.statusCode, withTenant.body).toBe(201);
    expect(withTenant.json()).toMatchObject({ id: 'acme-slot', tenant: 'acme', status: 'held' });
    const without = await h.call('POST', '/v1/holds', { id: 'plain-slot', customerEmail: 'a@example.com', ttlSeconds: 600 });
    expect(without.json()).toMatchObject({ id: 'plain-slot', tenant: '' });
    // The empty tenant may also be named.
    const empty = await h.call('POST', '/v1/holds', { id: 'empty-slot', customerEmail: 'a@example.com', ttlSeconds: 600, tenant: '' });
    expect(empty.json()).toMatchObject({ tenant: '' });
    expect((await h.call('GET', '/v1/holds/acme-slot')).json().hold).toMatchObject({ id: 'acme-slot', tenant: 'acme' });
  });

  it('is part of the request: the same id and body with another tenant is a conflict (409)', async () => {
    const body = { id: 'tenant-idem', customerEmail: 'b@example.com', ttlSeconds: 600, tenant: 'acme' };
    expect((await h.call('POST', '/v1/holds', body)).statusCode).toBe(201);
    expect((await h.call('POST', '/v1/holds', body)).statusCode).toBe(200);
    expect((await h.call('POST', '/v1/holds', { ...body, tenant: 'globex' })).statusCode).toBe(409);
    const { tenant: _none, ...untenanted } = body;
    expect((await h.call('POST', '/v1/holds', untenanted)).statusCode).toBe(409);
  });

  it.each([
    ['with a space', 'acme corp'],
    ['a leading dash', '-acme'],
    ['a slash', 'acme/eu'],
    ['129 characters', 'a'.repeat(129)],
    ['a NUL', 'acme\u0000'],
    ['a number', 42],
    ['null', null],
  ])('refuses a tenant %s with 400 naming tenant', async (_what, tenant) => {
    const res = await h.call('POST', '/v1/holds', { customerEmail: 'c@example.com', ttlSeconds: 60, tenant });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: { code: 'validation_error', field: 'tenant', message: expect.stringMatching(/^tenant: /) } });
  });

  it('accepts a tenant of 128 characters of the id alphabet', async () => {
    const tenant = `T${'a._:-9'.repeat(21)}x`;
    expect(tenant).toHaveLength(128);
    const res = await h.call('POST', '/v1/holds', { customerEmail: 'c@example.com', ttlSeconds: 60, tenant });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().tenant).toBe(tenant);
  });
});

describe('the tenant is carried to the intent', () => {
  it('the expiry lane copies the hold tenant to its intent; GET of the intent and the timeline show it', async () => {
    await h.call('POST', '/v1/holds', { id: 'carried', customerEmail: 'd@example.com', ttlSeconds: 600, tenant: 'initech' });
    await h.call('POST', '/v1/holds', { id: 'carried-plain', customerEmail: 'd@example.com', ttlSeconds: 600 });
    await expire(['carried', 'carried-plain']);
    const intent = await h.call('GET', '/v1/intents/reservation-expired:carried');
    expect(intent.statusCode).toBe(200);
    expect(intent.json()).toMatchObject({ id: 'reservation-expired:carried', holdId: 'carried', tenant: 'initech', state: 'pending' });
    expect((await h.call('GET', '/v1/intents/reservation-expired:carried-plain')).json().tenant).toBe('');
    const timeline = (await h.call('GET', '/v1/holds/carried')).json();
    expect(timeline.hold).toMatchObject({ tenant: 'initech', status: 'expired' });
    expect(timeline.intent).toMatchObject({ tenant: 'initech' });
    const { rows } = await h.db.pool.query(`SELECT tenant FROM ${ident(h.db.schema)}.email_outbox WHERE reservation_id = 'carried'`);
    expect(rows).toEqual([{ tenant: 'initech' }]);
  });
});

describe('?tenant= on the listings', () => {
  // Nine holds, three tenants interleaved, created one by one (so their order is known).
  const tenants = ['north', 'south', ''] as const;
  const ids = Array.from({ length: 9 }, (_, i) => `list-${i}-${tenants[i % 3] || 'none'}`);
  const of = (tenant: string) => ids.filter((_, i) => tenants[i % 3] === tenant).reverse();

  beforeAll(async () => {
    for (const [i, id] of ids.entries()) {
      const tenant = tenants[i % 3]!;
      const res = await h.call('POST', '/v1/holds', { id, customerEmail: 'e@example.com', ttlSeconds: 600, ...(tenant ? { tenant } : {}) });
      expect(res.statusCode, res.body).toBe(201);
    }
    // Expired one by one too, so the intents' created_at keep the same order.
    for (const id of ids) await expire([id]);
  });

  it("GET /v1/holds?tenant= lists only that tenant's holds, newest first, and pages to the end", async () => {
    const north = await allPages('/v1/holds?tenant=north', 'holds', 2);
    expect(north.ids).toEqual(of('north'));
    expect(north.pages).toBe(2);
    const page = (await h.call('GET', '/v1/holds?tenant=south&status=expired')).json();
    expect(page.holds.map((hold: { id: string }) => hold.id)).toEqual(of('south'));
    expect(page.holds.every((hold: { tenant: string }) => hold.tenant === 'south')).toBe(true);
    // `?tenant=` alone is the empty tenant's (so every hold created without one, here and in the tests above).
    const empty = await allPages('/v1/holds?tenant=', 'holds', 2);
    expect(empty.ids.slice(0, 3)).toEqual(of(''));
    expect(empty.ids).not.toContain('acme-slot');
    expect((await h.call('GET', '/v1/holds?tenant=nobody')).json()).toEqual({ holds: [], nextCursor: null });
  });

  it("GET /v1/intents?tenant= lists only that tenant's intents, newest first, and pages to the end", async () => {
    const south = await allPages('/v1/intents?tenant=south', 'intents', 2);
    expect(south.ids).toEqual(of('south').map((id) => `reservation-expired:${id}`));
    expect(south.pages).toBe(2);
    const pending = (await h.call('GET', '/v1/intents?tenant=north&state=pending&limit=1')).json();
    expect(pending.intents).toEqual([expect.objectContaining({ id: `reservation-expired:${of('north')[0]}`, tenant: 'north' })]);
    const empty = await allPages('/v1/intents?tenant=', 'intents', 5);
    expect(empty.ids).toEqual([...of('').map((id) => `reservation-expired:${id}`), 'reservation-expired:carried-plain']);
  });

  it.each(['/v1/holds', '/v1/intents'])('%s: 400 naming tenant for a tenant that breaks the id rule', async (path) => {
    for (const query of ['tenant=a%20b', 'tenant=-x', `tenant=${'a'.repeat(129)}`, 'tenant=a&tenant=b', 'tenant=%00']) {
      const res = await h.call('GET', `${path}?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error, query).toMatchObject({ code: 'validation_error', field: 'tenant' });
    }
  });
});
