import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ValidationError } from '../../src/errors.js';
import { validateTenantPolicy, type TenantPolicyFields } from '../../src/model/tenant-policy.js';
import { tenantPoliciesGet, tenantPoliciesList, tenantPolicyDelete, tenantPolicyPut } from '../../src/tables/tenants.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * tenant_policies (migration 0021) through its one module: the policy's
 * CRUD, the bucket it keeps for the delivery lane, keyset paging by tenant,
 * and CHECKs that refuse what the validation refuses.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tbl_tenants');
});
afterAll(() => db.close());

const none: TenantPolicyFields = { perSecond: null, burst: null, weight: 1, account: null, from: null, replyTo: null };
const bucket = async (tenant: string) =>
  (
    await db.pool.query<{ tokens: number | null; refilled_at: Date | null }>(
      `SELECT tokens, refilled_at FROM ${ident(db.schema)}.tenant_policies WHERE tenant = $1`,
      [tenant],
    )
  ).rows[0]!;

describe('tenantPolicyPut / Get / Delete', () => {
  it('creates, then replaces as a whole, saying which; get answers undefined for a tenant without a policy', async () => {
    expect(await tenantPoliciesGet(db.pool, db.schema, 'crud')).toBeUndefined();
    const first = await tenantPolicyPut(db.pool, db.schema, 'crud', { ...none, perSecond: 2, burst: 4, weight: 3, account: 'primary', from: 'Acme <no-reply@acme.example>', replyTo: 'help@acme.example' });
    expect(first.created).toBe(true);
    expect(first.policy).toMatchObject({ tenant: 'crud', perSecond: 2, burst: 4, weight: 3, account: 'primary', from: 'Acme <no-reply@acme.example>', replyTo: 'help@acme.example' });
    expect(first.policy.createdAt).toBeInstanceOf(Date);
    const second = await tenantPolicyPut(db.pool, db.schema, 'crud', { ...none, weight: 5 });
    expect(second.created).toBe(false);
    // Replaced, not merged: what the second put left out is gone.
    expect(second.policy).toMatchObject({ tenant: 'crud', perSecond: null, burst: null, weight: 5, account: null, from: null, replyTo: null });
    expect(second.policy.createdAt).toEqual(first.policy.createdAt);
    expect(second.policy.updatedAt.getTime()).toBeGreaterThanOrEqual(first.policy.updatedAt.getTime());
    expect(await tenantPoliciesGet(db.pool, db.schema, 'crud')).toEqual(second.policy);

    expect(await tenantPolicyDelete(db.pool, db.schema, 'crud')).toEqual(second.policy);
    expect(await tenantPolicyDelete(db.pool, db.schema, 'crud')).toBeUndefined();
    expect(await tenantPoliciesGet(db.pool, db.schema, 'crud')).toBeUndefined();
  });

  it("the empty tenant '' may have a policy like any other", async () => {
    const { policy, created } = await tenantPolicyPut(db.pool, db.schema, '', { ...none, weight: 2 });
    expect(created).toBe(true);
    expect(policy.tenant).toBe('');
    expect((await tenantPoliciesGet(db.pool, db.schema, ''))?.weight).toBe(2);
    await tenantPolicyDelete(db.pool, db.schema, '');
  });

  it('takes the clock it is given for its timestamps and the bucket', async () => {
    const at = new Date('2030-01-02T03:04:05.678Z');
    const { policy } = await tenantPolicyPut(db.pool, db.schema, 'clocked', { ...none, perSecond: 1, burst: 1 }, at);
    expect(policy.createdAt).toEqual(at);
    expect(policy.updatedAt).toEqual(at);
    expect((await bucket('clocked')).refilled_at).toEqual(at);
  });
});

describe("the cap's bucket, for the delivery lane", () => {
  it('starts full when a cap is set, is left alone by an unchanged cap, carried over (at most the new burst) when it changes, and cleared without one', async () => {
    await tenantPolicyPut(db.pool, db.schema, 'bucket', { ...none, weight: 2 });
    expect(await bucket('bucket')).toEqual({ tokens: null, refilled_at: null });

    await tenantPolicyPut(db.pool, db.schema, 'bucket', { ...none, perSecond: 5, burst: 10 });
    const full = await bucket('bucket');
    expect(full.tokens).toBe(10);
    expect(full.refilled_at).toBeInstanceOf(Date);

    // The lane took 7 permits: 3 left.
    const taken = new Date(full.refilled_at!.getTime() + 1000);
    await db.pool.query(`UPDATE ${ident(db.schema)}.tenant_policies SET tokens = 3, refilled_at = $1 WHERE tenant = 'bucket'`, [taken]);

    // Another field changes, the cap does not: the bucket is the lane's.
    await tenantPolicyPut(db.pool, db.schema, 'bucket', { ...none, perSecond: 5, burst: 10, weight: 9 });
    expect(await bucket('bucket')).toEqual({ tokens: 3, refilled_at: taken });

    // A larger cap hands out no new burst: the 3 left, refilled from where they were.
    await tenantPolicyPut(db.pool, db.schema, 'bucket', { ...none, perSecond: 50, burst: 100 });
    expect(await bucket('bucket')).toEqual({ tokens: 3, refilled_at: taken });

    // A smaller burst clamps it.
    await tenantPolicyPut(db.pool, db.schema, 'bucket', { ...none, perSecond: 1, burst: 2 });
    expect(await bucket('bucket')).toEqual({ tokens: 2, refilled_at: taken });

    await tenantPolicyPut(db.pool, db.schema, 'bucket', none);
    expect(await bucket('bucket')).toEqual({ tokens: null, refilled_at: null });
  });
});

describe('tenantPoliciesList', () => {
  it("pages by tenant, the empty tenant first, without skipping or repeating one; a forged cursor is a ValidationError naming cursor", async () => {
    const s = ident(db.schema);
    await db.pool.query(`DELETE FROM ${s}.tenant_policies`);
    const tenants = ['', ...Array.from({ length: 11 }, (_, i) => `list-${String(i).padStart(2, '0')}`)];
    for (const tenant of tenants) await tenantPolicyPut(db.pool, db.schema, tenant, none);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof tenantPoliciesList>> = await tenantPoliciesList(db.pool, db.schema, { limit: 5, ...(cursor ? { cursor } : {}) });
      expect(page.policies.length).toBeLessThanOrEqual(5);
      seen.push(...page.policies.map((p) => p.tenant));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 10);
    expect(seen).toEqual(tenants);
    expect(pages).toBe(3);
    // A page that ends exactly at the last row says so: no empty page after it.
    expect((await tenantPoliciesList(db.pool, db.schema, { limit: tenants.length })).nextCursor).toBeNull();

    for (const forged of ['bm9wZQ', Buffer.from(JSON.stringify(['bad tenant!'])).toString('base64url'), Buffer.from(JSON.stringify(['1', 'x'])).toString('base64url')]) {
      const error = await tenantPoliciesList(db.pool, db.schema, { limit: 5, cursor: forged }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('cursor');
    }
  });

  it('walks the primary key in order: no sort, however many tenants have policies', async () => {
    const client = await db.pool.connect();
    try {
      // On a handful of rows the planner may prefer a scan and a sort; with scans priced out, the key must serve.
      await client.query('SET enable_seqscan = off');
      await client.query('SET enable_bitmapscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT tenant FROM ${ident(db.schema)}.tenant_policies WHERE tenant > $1 ORDER BY tenant LIMIT 51`,
        ['m'],
      );
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toContain('tenant_policies_pkey');
      expect(text).not.toContain('Sort');
    } finally {
      await client.query('RESET enable_seqscan');
      await client.query('RESET enable_bitmapscan');
      client.release();
    }
  });
});

describe('the CHECKs mirror the validation', () => {
  const insert = (columns: Record<string, unknown>) => {
    const names = Object.keys(columns);
    return db.pool.query(
      `INSERT INTO ${ident(db.schema)}.tenant_policies (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
      Object.values(columns),
    );
  };
  const refused = async (columns: Record<string, unknown>) => (await insert(columns).catch((e: { code?: string; constraint?: string }) => e)) as { code?: string; constraint?: string };

  it.each([
    ['a tenant breaking the id rule', { tenant: 'acme corp' }, 'tenant_policies_tenant_format'],
    ['a rate without a burst', { tenant: 'c1', per_second: 1, tokens: 1, refilled_at: new Date() }, 'tenant_policies_cap'],
    ['a burst without a rate', { tenant: 'c2', burst: 1 }, 'tenant_policies_cap'],
    ['a rate under the slowest', { tenant: 'c3', per_second: 0.0001, burst: 1, tokens: 1, refilled_at: new Date() }, 'tenant_policies_per_second'],
    ['a burst of 0', { tenant: 'c4', per_second: 1, burst: 0, tokens: 0, refilled_at: new Date() }, 'tenant_policies_burst'],
    ['weight 0', { tenant: 'c5', weight: 0 }, 'tenant_policies_weight'],
    ['weight 1001', { tenant: 'c6', weight: 1001 }, 'tenant_policies_weight'],
    ['an account name no file could give', { tenant: 'c7', account: 'Primary' }, 'tenant_policies_account_format'],
    ['a sender that is no address', { tenant: 'c8', from_address: 'acme' }, 'tenant_policies_from_format'],
    ['a sender with a line break', { tenant: 'c9', from_address: 'Acme\r\nBcc: x@y.example <a@acme.example>' }, 'tenant_policies_from_format'],
    ['a reply-to with a space in the address', { tenant: 'c10', reply_to: 'a b@acme.example' }, 'tenant_policies_reply_to_format'],
    ['a cap without its bucket', { tenant: 'c11', per_second: 1, burst: 1 }, 'tenant_policies_bucket'],
    ['a bucket above its burst', { tenant: 'c12', per_second: 1, burst: 1, tokens: 2, refilled_at: new Date() }, 'tenant_policies_bucket'],
    ['a bucket without a cap', { tenant: 'c13', tokens: 1, refilled_at: new Date() }, 'tenant_policies_bucket'],
  ])('refuses %s (23514)', async (_what, columns, constraint) => {
    const error = await refused(columns);
    expect(error.code).toBe('23514');
    expect(error.constraint).toBe(constraint);
  });

  it('accepts what validateTenantPolicy accepts, including "Name <address>" senders', async () => {
    const fields = validateTenantPolicy({ perSecond: 0.001, weight: 1000, account: 'acme_own-1', from: 'Acme Support <support@acme.example>', replyTo: 'help@acme.example' });
    expect(fields.burst).toBe(1);
    await expect(tenantPolicyPut(db.pool, db.schema, 'edge', fields)).resolves.toMatchObject({ created: true });
  });
});
