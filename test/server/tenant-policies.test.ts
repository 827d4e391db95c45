import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Accounts } from '../../src/model/accounts.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * Per-tenant policy (issue 25, part 3) over /v1/tenants: PUT, GET, DELETE
 * and the listing, with an accounts file of two accounts (so `account` is
 * checked against configured names), validation errors naming their field,
 * 404s, and keyset paging.
 */
const accounts: Accounts = {
  accounts: [
    { name: 'primary', provider: 'sandbox', rate: { perSecond: 10, burst: 10, unit: 'requests' }, settings: {} },
    // Outside failover: an account one tenant brings for itself.
    { name: 'acme-own', provider: 'sandbox', rate: { perSecond: 5, burst: 5, unit: 'requests' }, settings: {} },
  ],
  failover: ['primary'],
};

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_tenant_policies', {}, { accounts });
});
afterAll(() => h.close());

type Policy = Record<string, unknown> & { tenant: string };
const put = (tenant: string, body?: unknown) => h.call('PUT', `/v1/tenants/${encodeURIComponent(tenant)}`, body);

describe('PUT /v1/tenants/:tenant', () => {
  it('201 with the stored policy and its location the first time, 200 when it replaces it as a whole', async () => {
    const body = { perSecond: 2, burst: 4, weight: 3, account: 'acme-own', from: 'Acme <no-reply@acme.example>', replyTo: 'help@acme.example' };
    const created = await put('acme', body);
    expect(created.statusCode, created.body).toBe(201);
    expect(created.headers['location']).toBe('/v1/tenants/acme');
    const policy = created.json() as Policy;
    expect(policy).toMatchObject({ tenant: 'acme', ...body });
    expect(typeof policy['createdAt']).toBe('string');
    // The lane's bucket is not part of the policy.
    expect(Object.keys(policy).sort()).toEqual(['account', 'burst', 'createdAt', 'from', 'perSecond', 'replyTo', 'tenant', 'updatedAt', 'weight']);

    const replaced = await put('acme', { weight: 7 });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.headers['location']).toBeUndefined();
    expect(replaced.json()).toMatchObject({ tenant: 'acme', perSecond: null, burst: null, weight: 7, account: null, from: null, replyTo: null, createdAt: policy['createdAt'] });
    expect((await h.call('GET', '/v1/tenants/acme')).json()).toEqual(replaced.json());
  });

  it('{} (or no body at all) is a valid policy: no cap, weight 1, the templates\' sender', async () => {
    const empty = await put('no-caps', {});
    expect(empty.statusCode, empty.body).toBe(201);
    expect(empty.json()).toMatchObject({ tenant: 'no-caps', perSecond: null, burst: null, weight: 1, account: null, from: null, replyTo: null });
    const noBody = await h.call('PUT', '/v1/tenants/no-body');
    expect(noBody.statusCode, noBody.body).toBe(201);
    expect(noBody.json()).toMatchObject({ weight: 1, perSecond: null });
  });

  it('null is "not set", so a GET answer\'s fields can be sent back', async () => {
    const response = await put('nulls', { perSecond: null, burst: null, weight: null, account: null, from: null, replyTo: null });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ perSecond: null, weight: 1 });
  });

  it('perSecond alone gets a burst of one second, rounded up and at least 1', async () => {
    expect((await put('rate-only', { perSecond: 2.5 })).json()).toMatchObject({ perSecond: 2.5, burst: 3 });
    expect((await put('slow', { perSecond: 0.001 })).json()).toMatchObject({ perSecond: 0.001, burst: 1 });
  });

  it('the empty tenant is /v1/tenants/ (nothing after the slash)', async () => {
    const created = await h.call('PUT', '/v1/tenants/', { weight: 4 });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ tenant: '', weight: 4 });
    expect((await h.call('GET', '/v1/tenants/')).json()).toMatchObject({ tenant: '', weight: 4 });
    expect((await h.call('DELETE', '/v1/tenants/')).statusCode).toBe(204);
    expect((await h.call('GET', '/v1/tenants/')).statusCode).toBe(404);
  });

  it.each([
    ['perSecond 0', { perSecond: 0 }, 'perSecond', 'must be a number from 0.001 to 1000000'],
    ['perSecond as a string', { perSecond: '5' }, 'perSecond', 'must be a number from 0.001 to 1000000'],
    ['perSecond above the most', { perSecond: 2_000_000 }, 'perSecond', 'must be a number from 0.001 to 1000000'],
    ['a fractional burst', { perSecond: 1, burst: 1.5 }, 'burst', 'must be a whole number from 1 to 1000000'],
    ['burst without perSecond', { burst: 5 }, 'burst', 'needs perSecond'],
    ['weight 0', { weight: 0 }, 'weight', 'must be a whole number from 1 to 1000'],
    ['weight 1001', { weight: 1001 }, 'weight', 'must be a whole number from 1 to 1000'],
    ['a fractional weight', { weight: 2.5 }, 'weight', 'must be a whole number from 1 to 1000'],
    ['an account name no file could give', { account: 'Primary' }, 'account', 'must be an account name'],
    ['an account that is not configured', { account: 'backup' }, 'account', 'must be a configured account (primary, acme-own)'],
    ['a sender that is no address', { from: 'acme' }, 'from', 'must be an address or "Name <address>"'],
    ['a sender with a line break', { from: 'Acme\r\nBcc: x@evil.example <a@acme.example>' }, 'from', 'must be an address or "Name <address>"'],
    ['a reply-to that is too long', { replyTo: `${'a'.repeat(320)}@acme.example` }, 'replyTo', 'must be at most 320 characters'],
    ['a reply-to with a NUL', { replyTo: 'a\u0000@acme.example' }, 'replyTo', 'must not contain NUL'],
    ['an unknown field', { perSecond: 1, rate: 5 }, 'rate', 'unknown field'],
    ['a body that is no object', [1, 2], 'body', ''],
  ])('400 naming the field: %s', async (_what, body, field, message) => {
    const response = await put('invalid', body);
    expect(response.statusCode, response.body).toBe(400);
    const { error } = response.json() as { error: { code: string; field: string; message: string } };
    expect(error.code).toBe('validation_error');
    expect(error.field).toBe(field);
    expect(error.message).toContain(message);
    // Nothing was stored.
    expect((await h.call('GET', '/v1/tenants/invalid')).statusCode).toBe(404);
  });

  it('logs one event per change, without the addresses', async () => {
    await put('logged', { from: 'Secret Sender <secret@acme.example>', weight: 2 });
    await h.call('DELETE', '/v1/tenants/logged');
    const events = h.logs.events().filter((e) => String(e['event']).startsWith('tenant.policy_') && e['tenant'] === 'logged');
    expect(events.map((e) => e['event'])).toEqual(['tenant.policy_set', 'tenant.policy_deleted']);
    expect(events[0]).toMatchObject({ created: true, weight: 2, from: true, replyTo: false });
    expect(h.logs.text).not.toContain('secret@acme.example');
  });
});

describe('GET and DELETE /v1/tenants/:tenant', () => {
  it('404 for a tenant without a policy; DELETE answers 204, then 404', async () => {
    const missing = await h.call('GET', '/v1/tenants/nobody');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ error: { code: 'not_found' } });
    await put('short-lived', { weight: 2 });
    const deleted = await h.call('DELETE', '/v1/tenants/short-lived');
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect((await h.call('DELETE', '/v1/tenants/short-lived')).statusCode).toBe(404);
    expect((await h.call('GET', '/v1/tenants/short-lived')).statusCode).toBe(404);
  });

  it.each(['GET', 'PUT', 'DELETE'] as const)('%s with a tenant that breaks the tenant rule is a 400 naming tenant', async (method) => {
    for (const tenant of ['acme%20corp', '-acme', 'a'.repeat(129), 'acme%2Fcorp']) {
      const response = await h.call(method, `/v1/tenants/${tenant}`, method === 'PUT' ? {} : undefined);
      expect(response.statusCode, `${method} ${tenant}`).toBe(400);
      expect(response.json()).toMatchObject({ error: { code: 'validation_error', field: 'tenant' } });
    }
  });

  it('is behind the bearer token', async () => {
    for (const [method, url] of [['GET', '/v1/tenants'], ['GET', '/v1/tenants/acme'], ['PUT', '/v1/tenants/acme'], ['DELETE', '/v1/tenants/acme']] as const) {
      expect((await h.call(method, url, undefined, { authorization: '' })).statusCode, `${method} ${url}`).toBe(401);
    }
  });
});

describe('GET /v1/tenants', () => {
  it('lists every policy by tenant, the empty tenant first, keyset-paged without skipping or repeating one', async () => {
    for (const tenant of ['', 'page-a', 'page-b', 'page-c']) await put(tenant, { weight: 2 });
    const all: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v1/tenants?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await h.call('GET', url);
      expect(response.statusCode, response.body).toBe(200);
      const page = response.json() as { policies: Policy[]; nextCursor: string | null };
      expect(page.policies.length).toBeLessThanOrEqual(3);
      all.push(...page.policies.map((p) => p.tenant));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 20);
    expect(all[0]).toBe('');
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual(expect.arrayContaining(['', 'acme', 'no-caps', 'page-a', 'page-b', 'page-c']));
    const { policies } = (await h.call('GET', '/v1/tenants?limit=500')).json() as { policies: Policy[] };
    expect(all).toEqual(policies.map((p) => p.tenant));
  });

  it('400 naming the field for a bad limit, a forged cursor or an unknown parameter', async () => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['cursor=bm9wZQ', 'cursor'],
      [`cursor=${Buffer.from(JSON.stringify(['bad tenant!'])).toString('base64url')}`, 'cursor'],
      ['tenant=acme', 'tenant'],
    ] as const) {
      const response = await h.call('GET', `/v1/tenants?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json()).toMatchObject({ error: { field } });
    }
  });
});

describe('pausing one tenant and the largest backlogs', () => {
  it('POST /v1/tenants/:tenant/pause stops its leases only; resume lets them go; GET /v1/tenants lists the backlogs', async () => {
    const { pool, schema } = h.db;
    const s = `"${schema}"`;
    for (const [tenant, n] of [['big', 5], ['small', 2]] as const) {
      await pool.query(
        `WITH r AS (INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
                    SELECT $1 || '-' || i, 'c@example.com', now(), 'expired', now(), 'x', $1 FROM generate_series(1, $2) i RETURNING id, expires_at)
         INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
         SELECT 'reservation-expired:' || r.id, r.id, 'c@example.com', 'reservation-expired', 'pending', r.expires_at, r.expires_at, $1 FROM r`,
        [tenant, n],
      );
    }
    const paused = await h.call('POST', '/v1/tenants/big/pause', { reason: 'customer asked us to hold' });
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ tenant: 'big', paused: true, reason: 'customer asked us to hold' });

    const { intentsLease } = await import('../../src/tables/outbox.js');
    const lease = () => intentsLease(pool, schema, { limit: 50, leaseMs: 30_000, token: crypto.randomUUID(), provider: 'x', now: null });
    expect((await lease()).map((i) => i.tenant)).toEqual(['small', 'small']);

    const listed = await h.call('GET', '/v1/tenants?top=5');
    expect(listed.statusCode, listed.body).toBe(200);
    const backlog = (listed.json() as { backlog: Array<Record<string, unknown>> }).backlog;
    expect(backlog[0]).toMatchObject({ tenant: 'big', backlog: 5, paused: true, pauseReason: 'customer asked us to hold' });
    expect(backlog[1]).toMatchObject({ tenant: 'small', backlog: 2, paused: false });

    expect((await h.call('POST', '/v1/tenants/big/resume')).statusCode).toBe(200);
    expect((await lease()).map((i) => i.tenant)).toEqual(Array(5).fill('big'));
    const again = await h.call('POST', '/v1/tenants/big/resume');
    expect(again.statusCode).toBe(404);
    const bad = await h.call('GET', '/v1/tenants?top=0');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('top');
  });
});
