import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ValidationError } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { getTenantPolicy, putTenantPolicy } from '../../src/client/functions.js';
import { eraseTenant } from '../../src/retention/erase.js';
import { runCliInProcess } from '../helpers/cli.js';
import { apiHarness, LogCapture, type ApiHarness } from '../helpers/server.js';
import { nonZero, writeStory } from '../helpers/retention-stories.js';

// One database for the file: every test writes its own tenant's stories.
let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('erase_tenant');
});
afterAll(() => h.close());

const s = () => ident(h.db.schema);

async function holdsOf(tenant: string) {
  return (
    await h.db.pool.query(
      `SELECT id, customer_email, erased_at IS NOT NULL AS erased, request_hash, metadata FROM ${s()}.support_reservations WHERE tenant = $1 ORDER BY id`,
      [tenant],
    )
  ).rows;
}

describe('eraseTenant', () => {
  it("erases every story of the tenant whatever its age, in batches, rejects its pending emails, keeps its held holds and its policy, and leaves other tenants alone", async () => {
    const acme = 'acme';
    await putTenantPolicy(h.db.pool, acme, { perSecond: 5, from: 'Acme <support@acme.example>' }, { schema: h.db.schema });
    // Five finished stories, from just now to 20 days ago: the age pass would erase only some of them.
    for (const [i, days] of [0, 1, 3, 8, 20].entries()) {
      await writeStory(h.db.pool, h.db.schema, { id: `acme-${i}`, tenant: acme, status: i % 2 ? 'confirmed' : 'expired', endedDaysAgo: days,
        intent: 'sent', email: `c${i}@example.com`, metadata: { note: `call c${i}@example.com` }, lastError: `soft bounce c${i}@example.com`,
        attempts: [{ outcome: 'failed', error: `450 <c${i}@example.com>` }, { outcome: 'accepted' }] });
    }
    await writeStory(h.db.pool, h.db.schema, { id: 'acme-pending', tenant: acme, status: 'expired', endedDaysAgo: 0, intent: 'pending', leased: true,
      email: 'p@example.com', attempts: [{ outcome: null }] });
    await writeStory(h.db.pool, h.db.schema, { id: 'acme-held', tenant: acme, status: 'held', endedDaysAgo: 0, email: 'live@example.com' });
    // The same address under another tenant, and the empty tenant's story: neither is acme's.
    await writeStory(h.db.pool, h.db.schema, { id: 'globex-1', tenant: 'globex', status: 'expired', endedDaysAgo: 3, intent: 'sent', email: 'c0@example.com',
      metadata: { note: 'call c0@example.com' } });
    await writeStory(h.db.pool, h.db.schema, { id: 'plain-1', status: 'cancelled', endedDaysAgo: 1, email: 'c1@example.com' });

    const logs = new LogCapture();
    const report = await eraseTenant(h.db.pool, acme, { schema: h.db.schema, batchSize: 2, logger: createLogger({ destination: logs }) });
    expect({ ...report, counts: nonZero(report.counts) }).toEqual({
      // Attempts: 3 expired stories' failed errors scrubbed (acme-0, -2, -4) and the pending one's open attempt closed.
      counts: { email_attempts: 4, email_outbox: 4, support_reservations: 6 },
      stories: 6,
      // 2 + 2 + 2, then the short one that finds nothing left.
      batches: 4,
      rejectedPending: 1,
      inFlight: 1,
      heldHolds: 1,
      heldHoldIds: ['acme-held'],
    });

    const acmeHolds = await holdsOf(acme);
    for (const hold of acmeHolds.filter((r) => r.id !== 'acme-held')) {
      expect(hold).toMatchObject({ customer_email: null, erased: true, request_hash: 'erased' });
      expect(JSON.stringify(hold.metadata)).not.toContain('@');
    }
    expect(acmeHolds.find((r) => r.id === 'acme-held')).toMatchObject({ customer_email: 'live@example.com', erased: false });
    const intents = (await h.db.pool.query(
      `SELECT reservation_id, state, recipient, last_error, lease_token FROM ${s()}.email_outbox WHERE tenant = $1 ORDER BY reservation_id`, [acme],
    )).rows;
    expect(intents.map((o) => o.recipient)).toEqual([null, null, null, null]);
    expect(intents.find((o) => o.reservation_id === 'acme-pending')).toEqual({
      reservation_id: 'acme-pending', state: 'rejected', recipient: null, last_error: 'erased on request', lease_token: null,
    });
    expect(intents.find((o) => o.reservation_id === 'acme-0')!.last_error).toBe('soft bounce [erased]');
    const attempts = (await h.db.pool.query(
      `SELECT a.intent_id, a.outcome, a.error FROM ${s()}.email_attempts a JOIN ${s()}.email_outbox o ON o.id = a.intent_id WHERE o.tenant = $1`, [acme],
    )).rows;
    expect(JSON.stringify(attempts)).not.toMatch(/@example\.com/);
    expect(attempts.find((a) => a.intent_id === 'reservation-expired:acme-pending')).toMatchObject({ outcome: 'abandoned' });

    // Other tenants keep everything, even the same address.
    expect(await holdsOf('globex')).toEqual([
      expect.objectContaining({ id: 'globex-1', customer_email: 'c0@example.com', erased: false, metadata: { note: 'call c0@example.com' } }),
    ]);
    expect(await holdsOf('')).toEqual([expect.objectContaining({ id: 'plain-1', customer_email: 'c1@example.com', erased: false })]);
    const globexIntent = (await h.db.pool.query(`SELECT recipient FROM ${s()}.email_outbox WHERE tenant = 'globex'`)).rows;
    expect(globexIntent).toEqual([{ recipient: 'c0@example.com' }]);

    // The policy is configuration, not a customer's data: it stays.
    expect(await getTenantPolicy(h.db.pool, acme, { schema: h.db.schema })).toMatchObject({ perSecond: 5 });

    // Counts only in the log, never an address.
    const events = logs.events().filter((e) => e.event === 'retention.tenant_erasure');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ tenant: acme, stories: 6, rejectedPending: 1, heldHolds: 1 });
    expect(logs.text).not.toContain('@example.com');

    // Idempotent.
    const again = await eraseTenant(h.db.pool, acme, { schema: h.db.schema });
    expect({ ...again, counts: nonZero(again.counts) }).toMatchObject({ counts: {}, stories: 0, batches: 1, heldHoldIds: ['acme-held'] });
  });

  it('the empty tenant is a tenant like any other', async () => {
    const before = await holdsOf('');
    const report = await eraseTenant(h.db.pool, '', { schema: h.db.schema });
    expect(report.stories).toBe(before.filter((r) => r.customer_email !== null).length);
    expect((await holdsOf('')).every((r) => r.customer_email === null)).toBe(true);
    expect((await holdsOf('globex'))[0].customer_email).toBe('c0@example.com');
  });

  it('refuses what is not a tenant, naming tenant', async () => {
    for (const bad of ['-acme', 'a b', 'x'.repeat(129), 42, null, undefined]) {
      const error = await eraseTenant(h.db.pool, bad, { schema: h.db.schema }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('tenant');
    }
    await expect(eraseTenant(h.db.pool, 'acme', { schema: h.db.schema, batchSize: 0 })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('POST /v1/erasures {tenant}', () => {
  it('erases the tenant and reports counts, never addresses', async () => {
    await writeStory(h.db.pool, h.db.schema, { id: 'api-t-1', tenant: 'initech', status: 'expired', endedDaysAgo: 0, intent: 'pending', email: 'kim@example.com' });
    const res = await h.call('POST', '/v1/erasures', { tenant: 'initech' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      counts: { email_outbox: 1, support_reservations: 1 },
      stories: 1,
      rejectedPending: 1,
      inFlight: 0,
      heldHolds: 0,
      heldHoldIds: [],
    });
    expect(res.body).not.toContain('@');
    expect(h.logs.text).not.toContain('kim@example.com');
  });

  it.each([
    [{ tenant: 'no spaces' }, 'tenant'],
    [{ tenant: 7 }, 'tenant'],
    [{ tenant: 'acme', address: 'a@example.com' }, 'tenant'],
    [{ tenant: 'acme', also: 1 }, 'also'],
  ] as const)('%j is 400 naming %s', async (body, field) => {
    const res = await h.call('POST', '/v1/erasures', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
  });
});

describe('leasehold erase --tenant', () => {
  const cli = (args: string[]) => runCliInProcess(args, h.db.env);

  it('erases the tenant and prints counts, the pending email rejected and the held hold kept', async () => {
    await writeStory(h.db.pool, h.db.schema, { id: 'cli-t-1', tenant: 'umbrella', status: 'expired', endedDaysAgo: 2, intent: 'pending', email: 'zoe@example.com' });
    await writeStory(h.db.pool, h.db.schema, { id: 'cli-t-2', tenant: 'umbrella', status: 'held', endedDaysAgo: 0, email: 'zoe@example.com' });
    const res = await cli(['erase', '--tenant', 'umbrella']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^erased 1 stories of tenant umbrella in 1 batch\(es\):/);
    expect(res.stdout).toMatch(/support_reservations\s+rows changed 1/);
    expect(res.stdout).toContain('1 pending email(s) rejected ("erased on request"): they will not be sent');
    expect(res.stdout).toContain('1 held hold(s) kept, they are live reservations: cli-t-2');
    expect(res.stdout).toContain("the tenant's policy (tenant_policies), if it has one, is configuration and stays");
    expect((res.stdout + res.stderr).toLowerCase()).not.toContain('zoe@example.com');
    const again = await cli(['erase', '--tenant', 'umbrella', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ stories: 0, heldHolds: 1, heldHoldIds: ['cli-t-2'] });
  });

  it.each([
    [['erase'], /give --email <address> or --tenant <tenant>/],
    [['erase', '--tenant', 'acme', '--email', 'a@example.com'], /--tenant cannot be used with --email/],
    [['erase', '--tenant', 'no spaces'], /--tenant.*must be empty or 1-128 characters/],
  ])('%j is a usage error: exit 2 naming the flag', async (args, pattern) => {
    const res = await cli(args);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split('\n')[0]).toMatch(pattern);
    expect(res.stdout).toBe('');
  });
});
