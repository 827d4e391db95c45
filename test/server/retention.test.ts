import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, writeStory } from '../helpers/retention-stories.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_retention', { LEASEHOLD_RETENTION_DAYS: '30', LEASEHOLD_ERASE_PII_AFTER_DAYS: '7' });
});
afterAll(() => h.close());

describe('retention API', () => {
  it('GET /v1/retention shows the policy and the oldest ages', async () => {
    await writeStory(h.db.pool, h.db.schema, { id: 'api-old', status: 'confirmed', endedDaysAgo: 40 });
    const res = await h.call('GET', '/v1/retention');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.policy).toEqual({ retentionDays: 30, erasePiiAfterDays: 7, batchSize: 1000, intervalMs: 60_000, auditRetentionDays: 365 });
    expect(body.oldestAgeSeconds.support_reservations).toBeGreaterThan(39 * 86_400);
    expect(body.oldestUnerasedAgeSeconds).toBeGreaterThan(39 * 86_400);
  });

  it('POST /v1/retention/prune {dryRun:true} changes nothing; without it, prunes and reports per table', async () => {
    await writeStory(h.db.pool, h.db.schema, { id: 'api-sent', status: 'expired', endedDaysAgo: 31, intent: 'sent' });
    await writeStory(h.db.pool, h.db.schema, { id: 'api-week', status: 'cancelled', endedDaysAgo: 8 });
    const dry = await h.call('POST', '/v1/retention/prune', { dryRun: true });
    expect(dry.statusCode).toBe(200);
    expect(dry.json()).toMatchObject({
      dryRun: true,
      prune: { email_attempts: 1, email_outbox: 1, support_reservations: 2 },
      erase: { support_reservations: 1 },
      keptPendingStories: 0,
    });
    expect(await ids(h.db.pool, h.db.schema, 'support_reservations')).toEqual(['api-old', 'api-sent', 'api-week']);

    const run = await h.call('POST', '/v1/retention/prune');
    expect(run.statusCode).toBe(200);
    expect(run.json()).toMatchObject({
      dryRun: false,
      pruned: { email_attempts: 1, email_outbox: 1, support_reservations: 2 },
      erased: { support_reservations: 1 },
      complete: true,
    });
    expect(await ids(h.db.pool, h.db.schema, 'support_reservations')).toEqual(['api-week']);
    expect(h.logs.text).toContain('"event":"retention.pruned"');
  });

  it('POST /v1/erasures {address} erases the address and reports per table', async () => {
    await writeStory(h.db.pool, h.db.schema, { id: 'api-kim', status: 'expired', endedDaysAgo: 1, intent: 'pending', email: 'kim@example.com' });
    const res = await h.call('POST', '/v1/erasures', { address: 'KIM@example.com' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      counts: { email_attempts: 1, email_events: 0, email_messages: 0, email_outbox: 1, support_reservations: 1, suppressions: 0 },
      rejectedPending: 1,
      inFlight: 0,
      heldHoldIds: [],
    });
    expect(h.logs.text).not.toContain('kim@example.com');
    expect(h.logs.text.toLowerCase()).not.toContain('kim@example.com');
  });

  it.each([
    ['POST', '/v1/erasures', {}, 'address'],
    ['POST', '/v1/erasures', { address: 'not an address' }, 'address'],
    ['POST', '/v1/erasures', { address: 'a@example.com', also: 1 }, 'also'],
    ['POST', '/v1/erasures', { email: 'a@example.com' }, 'email'],
    ['POST', '/v1/retention/prune', { dryRun: 'yes' }, 'dryRun'],
    ['POST', '/v1/retention/prune', { retentionDays: 1 }, 'retentionDays'],
  ] as const)('%s %s %j is 400 naming the field', async (method, url, body, field) => {
    const res = await h.call(method, url, body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', field });
  });

  it.each([
    ['GET', '/v1/retention'],
    ['POST', '/v1/retention/prune'],
    ['POST', '/v1/erasures'],
  ] as const)('%s %s needs the token', async (method, url) => {
    const res = await h.app.inject({ method, url });
    expect(res.statusCode).toBe(401);
  });

  it('/metrics exports the retention gauges and counters', async () => {
    const text = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^leasehold_retention_days 30$/m);
    expect(text).toMatch(/^leasehold_erase_pii_after_days 7$/m);
    expect(text).toMatch(/^leasehold_retention_oldest_age_seconds\{table="support_reservations"\} \d/m);
    expect(text).toMatch(/^leasehold_retention_oldest_unerased_age_seconds \d/m);
    expect(text).toMatch(/^leasehold_retention_pruned_rows_total\{table="support_reservations"\} 2$/m);
  });
});
