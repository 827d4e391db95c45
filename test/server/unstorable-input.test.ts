import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * Input PostgreSQL cannot store (NUL, unpaired surrogates), JSON nested deep
 * enough to overflow a recursive walk, and cursors that decode to something
 * the database would choke on: each is a 400 naming the field, never a 5xx.
 * Bodies are sent as JSON text so "\u0000" and "\ud800" arrive as JSON
 * escapes, exactly as a client would send them.
 */

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_unstorable');
});
afterAll(() => h.close());

const NUL = '\\u0000';
const LONE_HIGH = '\\ud800';
const LONE_LOW = '\\udc00';

function expect400(res: { statusCode: number; json(): unknown; body: string }, field: string): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json()).toEqual({ error: { code: 'validation_error', field, message: expect.stringMatching(new RegExp(`^${field.replace(/\./g, '\\.')}: `)) } });
}

describe('strings PostgreSQL cannot store are 400s naming the field', () => {
  it.each([
    [`{"x":"${NUL}"}`, 'metadata.x'],
    [`{"x":"a${LONE_HIGH}"}`, 'metadata.x'],
    [`{"x":"${LONE_LOW}b"}`, 'metadata.x'],
    [`{"x":{"y":["ok","${NUL}"]}}`, 'metadata.x.y.1'],
    [`{"${NUL}":"y"}`, 'metadata'],
    [`{"${LONE_HIGH}":"y"}`, 'metadata'],
    [`{"x":{"${LONE_LOW}":1}}`, 'metadata.x'],
  ])('metadata %s -> 400 naming %s', async (metadata, field) => {
    const res = await h.call('POST', '/v1/holds', `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":${metadata}}`);
    expect400(res, field);
  });

  it('a well-formed surrogate pair (an emoji) is fine', async () => {
    const res = await h.call('POST', '/v1/holds', `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":{"\\ud83d\\ude00":"\\ud83d\\ude00"}}`);
    expect(res.statusCode).toBe(201);
    expect(res.json().metadata).toEqual({ '\u{1F600}': '\u{1F600}' });
  });

  it.each([
    [`"customerEmail":"a${NUL}@example.com","ttlSeconds":60`, 'customerEmail'],
    [`"customerEmail":"a${LONE_HIGH}@example.com","ttlSeconds":60`, 'customerEmail'],
    [`"id":"a${NUL}","customerEmail":"a@example.com","ttlSeconds":60`, 'id'],
    [`"id":"a${LONE_LOW}","customerEmail":"a@example.com","ttlSeconds":60`, 'id'],
    [`"customerEmail":"a@example.com","expiresAt":"2030-01-01T00:00:00Z${NUL}"`, 'expiresAt'],
  ])('hold field {%s} -> 400 naming %s', async (fields, field) => {
    expect400(await h.call('POST', '/v1/holds', `{${fields}}`), field);
  });

  it.each([NUL, LONE_HIGH, LONE_LOW, `paused ${NUL} here`])('pause reason %s -> 400 naming reason, and delivery stays running', async (reason) => {
    expect400(await h.call('POST', '/v1/delivery/pause', `{"reason":"${reason}"}`), 'reason');
    expect((await h.call('GET', '/v1/delivery')).json().paused).toBe(false);
  });
});

describe('deeply nested metadata', () => {
  it('~5,000 levels under the 16 KiB cap -> 400 naming metadata (not a stack overflow)', async () => {
    const depth = 5000;
    const metadata = `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    expect(Buffer.byteLength(metadata)).toBeLessThan(16 * 1024);
    const res = await h.call('POST', '/v1/holds', `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":${metadata}}`);
    expect400(res, 'metadata');
    expect(res.json().error.message).toMatch(/nested/);
  });

  it('32 levels are accepted, 33 are not', async () => {
    const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    expect((await h.call('POST', '/v1/holds', `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":${nested(32)}}`)).statusCode).toBe(201);
    expect400(await h.call('POST', '/v1/holds', `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":${nested(33)}}`), 'metadata');
  });
});

describe('tampered cursors', () => {
  const cursor = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

  // The cursor's time is microseconds since the epoch, as digits (model/cursor.ts).
  it.each([
    ['a date instead of microseconds', cursor(['2024-01-01T00:00:00.000Z', 'x'])],
    ['a NUL in the id', cursor(['1704067200000000', 'a\u0000'])],
    ['an unpaired surrogate in the id', cursor('["1704067200000000","a\\ud800"]')],
    ['a NUL in the time', cursor(['1704067200000000\u0000', 'x'])],
    ['a fraction', cursor(['1704067200000000.5', 'x'])],
    ['more digits than a bigint holds', cursor(['12345678901234567890', 'x'])],
    ['a number for the time', cursor([1704067200000000, 'x'])],
    ['a number for the id', cursor(['1704067200000000', 1])],
    ['three elements', cursor(['1704067200000000', 'x', 'y'])],
  ])('%s -> 400 naming cursor', async (_what, value) => {
    expect400(await h.call('GET', `/v1/intents?cursor=${value}`), 'cursor');
  });

  it('any time in digits is a cursor: one just after the epoch pages to an empty end', async () => {
    const res = await h.call('GET', `/v1/intents?cursor=${cursor(['1', 'x'])}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ intents: [], nextCursor: null });
  });
});

describe('paging through intents created in the same instant', () => {
  it('pages through a batch sharing one microsecond timestamp without skipping any', async () => {
    // The expiry lane writes a whole batch with one captured now (microseconds);
    // a cursor that kept only milliseconds skipped the rest of the batch.
    const s = ident(h.db.schema);
    await h.db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
       SELECT 'same-' || n, 'x@example.com', 'expired', t, t, t, 'h'
         FROM generate_series(1, 5) n, (SELECT '2020-01-01 00:00:00.123456+00'::timestamptz AS t) c`,
    );
    await h.db.pool.query(
      `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
       SELECT 'reservation-expired:' || id, id, customer_email, 'reservation-expired', 'pending', expired_at, expired_at
         FROM ${s}.support_reservations WHERE id LIKE 'same-%'`,
    );
    const seen: string[] = [];
    let next: string | null = '';
    while (next !== null) {
      const res = await h.call('GET', `/v1/intents?limit=2${next ? `&cursor=${next}` : ''}`);
      expect(res.statusCode).toBe(200);
      const page = res.json() as { intents: Array<{ id: string }>; nextCursor: string | null };
      seen.push(...page.intents.map((i) => i.id));
      next = page.nextCursor;
    }
    expect(seen.filter((id) => id.startsWith('reservation-expired:same-')).sort()).toEqual(
      [1, 2, 3, 4, 5].map((n) => `reservation-expired:same-${n}`),
    );
  });
});

describe('after all of it', () => {
  it('the server still serves', async () => {
    expect((await h.call('GET', '/v1/intents')).statusCode).toBe(200);
  });
});
