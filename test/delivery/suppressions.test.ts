import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { ingestEvents } from '../../src/events/ingest.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { addressHash } from '../../src/model/address.js';
import { suppressionsAdd } from '../../src/tables/suppressions.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * The suppression list: keyed by the hash of the normalised address, fed by
 * hard bounces and complaints, managed through /v1/suppressions, and
 * enforced by the delivery lane before it calls the provider.
 */

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('suppressions');
});
afterAll(() => h?.close());

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('address keys', () => {
  it('the key is the hex sha256 of the trimmed, lower-cased address', () => {
    expect(addressHash('  Ana@Example.COM ')).toBe(sha256('ana@example.com'));
    expect(addressHash('ana@example.com')).toBe(addressHash('ANA@EXAMPLE.COM'));
  });

  it('the database refuses a row whose hash is not its address’s', async () => {
    await expect(
      h.db.pool.query(`INSERT INTO ${ident(h.db.schema)}.suppressions (address_hash, address, reason) VALUES ($1, 'x@example.com', 'manual')`, [sha256('y@example.com')]),
    ).rejects.toThrow(/suppressions_hash_matches/);
  });
});

describe('/v1/suppressions', () => {
  it('adds by hand (201), again is the existing entry (200), normalising the address', async () => {
    const created = await h.call('POST', '/v1/suppressions', { address: '  Ops-Added@Example.com ', detail: 'asked us to stop' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      address: 'ops-added@example.com',
      addressHash: sha256('ops-added@example.com'),
      reason: 'manual',
      detail: 'asked us to stop',
      provider: null,
    });
    const again = await h.call('POST', '/v1/suppressions', { address: 'ops-added@example.com' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ addressHash: sha256('ops-added@example.com'), detail: 'asked us to stop' });
  });

  it('refuses bad input with 400 naming the field', async () => {
    for (const [body, field] of [
      [{ address: 'not an address' }, 'address'],
      [{ address: 5 }, 'address'],
      [{}, 'address'],
      [{ address: 'a@example.com', reason: 'complaint' }, 'reason'],
      [{ address: 'a@example.com', detail: 'bad\u0000byte' }, 'detail'],
    ] as const) {
      const res = await h.call('POST', '/v1/suppressions', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.field).toBe(field);
    }
    expect((await h.call('GET', '/v1/suppressions?limit=0')).json().error.field).toBe('limit');
    expect((await h.call('GET', '/v1/suppressions?cursor=bogus')).json().error.field).toBe('cursor');
    expect((await h.call('GET', '/v1/suppressions?reason=bored')).json().error.field).toBe('reason');
  });

  it('lists newest first, paged by cursor, each entry once', async () => {
    const addresses = Array.from({ length: 7 }, (_, i) => `page-${i}@example.com`);
    // One statement: all seven share created_at, so the page boundary falls inside one timestamp.
    await suppressionsAdd(h.db.pool, h.db.schema, addresses.map((address) => ({ address, reason: 'manual', detail: null, provider: null })));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await h.call('GET', `/v1/suppressions?limit=3&reason=manual${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode).toBe(200);
      const page = res.json() as { suppressions: Array<{ address: string; createdAt: string }>; nextCursor: string | null };
      seen.push(...page.suppressions.map((s) => s.address));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen.filter((a) => a.startsWith('page-')).sort()).toEqual([...addresses].sort());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.at(-1)).toBe('ops-added@example.com'); // the oldest comes last
  });

  it('removes by address or by hash; removing again is a 404', async () => {
    await h.call('POST', '/v1/suppressions', { address: 'remove-me@example.com' });
    const removed = await h.call('DELETE', `/v1/suppressions/${encodeURIComponent('Remove-Me@example.com')}`);
    expect(removed.statusCode).toBe(200);
    expect(removed.json().removed).toMatchObject({ address: 'remove-me@example.com', reason: 'manual' });
    expect((await h.call('DELETE', '/v1/suppressions/remove-me%40example.com')).statusCode).toBe(404);

    await h.call('POST', '/v1/suppressions', { address: 'by-hash@example.com' });
    expect((await h.call('DELETE', `/v1/suppressions/${sha256('by-hash@example.com')}`)).statusCode).toBe(200);
    expect((await h.call('DELETE', '/v1/suppressions/neither-hash-nor-address')).statusCode).toBe(400);
  });

  it('needs the bearer token', async () => {
    for (const [method, url] of [['GET', '/v1/suppressions'], ['POST', '/v1/suppressions'], ['DELETE', '/v1/suppressions/a%40example.com']] as const) {
      expect((await h.app.inject({ method, url })).statusCode).toBe(401);
    }
  });
});

describe('the delivery lane never sends to a suppressed recipient', () => {
  let n = 0;
  beforeEach(async () => {
    // A slow limiter, so what the test sees in the bucket is what the worker did with its permits.
    await rateLimiterSet(h.db.pool, h.db.schema, { perSecond: 0.001, burst: 4 });
    await h.db.pool.query(`UPDATE ${ident(h.db.schema)}.rate_limiter SET tokens = 4`);
  });

  async function expiredHolds(emails: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const email of emails) {
      const id = `sup-${++n}`;
      await createHold(h.db.pool, { id, customerEmail: email, ttlSeconds: 600 }, { schema: h.db.schema });
      ids.push(id);
    }
    await h.db.pool.query(`UPDATE ${ident(h.db.schema)}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = ANY ($1)`, [ids]);
    await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
    return ids.map((id) => `reservation-expired:${id}`);
  }

  it('a hard-bounced address is rejected ("suppressed: hard bounce at ...") without a provider call, in the same round as a normal send', async () => {
    await ingestEvents(h.db.pool, h.db.schema, [
      {
        provider: 'resend',
        providerEventId: 'evt-bounce-1',
        messageId: 'earlier-message',
        kind: 'bounced',
        bounceType: 'hard',
        providerType: 'email.bounced/Permanent/General',
        reason: 'mailbox does not exist',
        occurredAt: new Date(),
        recipients: ['Bounced.Before@Example.com'],
      },
    ]);
    const [blocked, fine] = await expiredHolds(['bounced.before@EXAMPLE.com', 'fine@example.com']);
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'ok' });
    const run = await new DeliveryWorker({ pool: h.db.pool, schema: h.db.schema, gateway, metrics: h.metrics, logger: h.logger }).runOnce();
    expect(run).toMatchObject({ leased: 2, outcomes: { rejected: 1, accepted: 1 } });
    // The provider saw exactly one message, and not for the suppressed recipient.
    expect(gateway.calls.map((c) => c.message.intentId)).toEqual([fine]);
    const intent = await intentsGet(h.db.pool, h.db.schema, blocked!);
    expect(intent).toMatchObject({ state: 'rejected' });
    expect(intent!.lastError).toMatch(/^suppressed: hard bounce at \d{4}-\d\d-\d\dT/);
    expect((await attemptsList(h.db.pool, h.db.schema, blocked!))[0]).toMatchObject({ outcome: 'rejected', providerCode: 'suppressed' });
    // Two permits taken, one used: the suppressed intent's permit went back.
    expect((await rateLimiterGet(h.db.pool, h.db.schema))!.tokens).toBeCloseTo(3, 1);
    expect((await h.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^leasehold_email_suppressed_total 1$/m);
    // A replay of a suppressed intent is rejected again: the list, not the intent, decides.
    await h.call('POST', `/v1/intents/${encodeURIComponent(blocked!)}/replay`);
    await new DeliveryWorker({ pool: h.db.pool, schema: h.db.schema, gateway, logger: h.logger }).runOnce();
    expect(gateway.calls).toHaveLength(1);
    expect(await intentsGet(h.db.pool, h.db.schema, blocked!)).toMatchObject({ state: 'rejected' });
  });

  it('erasure (address set to NULL, hash kept) keeps the suppression working', async () => {
    await h.call('POST', '/v1/suppressions', { address: 'erase-me@example.com' });
    // What the retention feature's erase does.
    await h.db.pool.query(`UPDATE ${ident(h.db.schema)}.suppressions SET address = NULL WHERE address = 'erase-me@example.com'`);
    const [intentId] = await expiredHolds(['Erase-Me@example.com']);
    const gateway = new ScriptedGateway();
    await new DeliveryWorker({ pool: h.db.pool, schema: h.db.schema, gateway, logger: h.logger }).runOnce();
    expect(gateway.calls).toHaveLength(0);
    expect((await intentsGet(h.db.pool, h.db.schema, intentId!))!.lastError).toMatch(/^suppressed: added by an operator at /);
    const listed = (await h.call('GET', '/v1/suppressions?limit=500')).json().suppressions as Array<{ address: string | null; addressHash: string }>;
    expect(listed.find((s) => s.addressHash === sha256('erase-me@example.com'))).toMatchObject({ address: null });
    // And it can still be lifted, by its hash.
    expect((await h.call('DELETE', `/v1/suppressions/${sha256('erase-me@example.com')}`)).statusCode).toBe(200);
  });

  it('an operator lifting a suppression is not undone when the provider resends the same complaint', async () => {
    const complaint = {
      provider: 'postmark' as const,
      providerEventId: 'SpamComplaint:777',
      messageId: 'pm-earlier',
      kind: 'complained' as const,
      bounceType: null,
      providerType: 'SpamComplaint/SpamComplaint',
      reason: null,
      occurredAt: new Date(),
      recipients: ['changed-mind@example.com'],
    };
    expect(await ingestEvents(h.db.pool, h.db.schema, [complaint], { logger: h.logger })).toMatchObject({ stored: 1, suppressed: 1 });
    expect((await h.call('DELETE', '/v1/suppressions/changed-mind%40example.com')).statusCode).toBe(200);
    expect(await ingestEvents(h.db.pool, h.db.schema, [complaint], { logger: h.logger })).toMatchObject({ stored: 0, duplicates: 1, suppressed: 0 });
    const [intentId] = await expiredHolds(['changed-mind@example.com']);
    const gateway = new ScriptedGateway();
    await new DeliveryWorker({ pool: h.db.pool, schema: h.db.schema, gateway, logger: h.logger }).runOnce();
    expect(gateway.calls.map((c) => c.message.intentId)).toEqual([intentId]);
  });

  it('nothing about the suppressed recipient reaches the logs', () => {
    for (const address of ['bounced.before@example.com', 'Bounced.Before@Example.com', 'erase-me@example.com', 'changed-mind@example.com', 'ops-added@example.com']) {
      expect(h.logs.text).not.toContain(address);
    }
  });
});
