import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';

/**
 * Random bodies, params, queries, content types and paths at every route:
 * whatever arrives, the answer is a documented 4xx (or a success) in the one
 * error shape, never a 5xx, and the process keeps serving. The generators
 * include the classes that once got through as 5xx: strings PostgreSQL cannot
 * store (NUL, unpaired surrogates), JSON nested thousands deep, and cursors
 * decoded from something other than this API. Each test stands alone (its
 * own runs, its own assertions, and the known hold put back before it), so
 * any order or subset of them is valid: `npx vitest run --sequence.shuffle`.
 */

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_fuzz');
});
afterAll(() => h.close());

// A hold the generated paths can reach ('known'), there before every test
// whatever the tests before it did: creating it again is idempotent.
const KNOWN = { id: 'known', customerEmail: 'k@example.com', ttlSeconds: 600 };
beforeEach(async () => {
  const res = await h.call('POST', '/v1/holds', KNOWN);
  expect([200, 201], res.body).toContain(res.statusCode);
});
// Every fuzz leaves a serving process behind.
afterEach(async () => {
  expect((await h.call('GET', '/v1/holds/known')).statusCode).toBe(200);
});

const RUNS = 200;

// Code units PostgreSQL refuses (NUL) or that are not text at all (unpaired surrogates).
const unstorable = fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\udc00\ud800', '\ud800\u0000\udc00');
// Mostly ordinary text with one of them somewhere inside.
const nastyString = fc
  .tuple(fc.string({ maxLength: 12 }), unstorable, fc.string({ maxLength: 12 }))
  .map(([before, bad, after]) => before + bad + after);
const anyString = (maxLength: number) => fc.oneof({ weight: 3, arbitrary: fc.string({ maxLength }) }, nastyString);

// JSON text nested `depth` deep (arrays or objects), small enough to pass the 64 KiB body limit.
const deepJson = fc
  .tuple(fc.integer({ min: 33, max: 6000 }), fc.constantFrom('array', 'object'))
  .map(([depth, kind]) => (kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(Math.min(depth, 4000)) + '1' + '}'.repeat(Math.min(depth, 4000))));

// What a client could hand back as a cursor: the right shape with wrong content, or anything base64url.
const cursorTime = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }).map(String),
  fc.constantFrom('1', '0', '2024-02-31T00:00:00.000Z', '0000-01-01T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01T00:00:00', 'infinity', 'epoch'),
  fc.string({ maxLength: 30 }),
  nastyString,
);
const tamperedCursor = fc
  .oneof(
    fc.tuple(cursorTime, fc.oneof(anyString(20), fc.integer(), fc.constant(null))).map((v) => JSON.stringify(v)),
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
    deepJson,
    fc.string({ maxLength: 40 }),
  )
  .map((text) => Buffer.from(text).toString('base64url'));

const rawSegment = fc.oneof(
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
  fc.constantFrom('known', 'reservation-expired:known', '..', '%2e%2e', '%00', '%ZZ', '%E0%A4%A', 'a'.repeat(300), '%', '-x', ':x', '#'),
  // A lone surrogate as (invalid) UTF-8, and NUL inside an otherwise valid id.
  fc.constantFrom('%ED%A0%80', 'a%ED%B0%80', 'known%00', 'reservation-expired:known%00'),
  fc.stringMatching(/^[A-Za-z0-9._:%-]{1,60}$/),
);

const holdLike = fc.record(
  {
    id: fc.oneof(anyString(140), fc.integer(), fc.constant(null)),
    customerEmail: fc.oneof(fc.emailAddress(), anyString(300), fc.emailAddress().map((e) => e.replace('@', '\u0000@')), fc.integer(), fc.constant(null)),
    expiresAt: fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.integer({ min: -1e6, max: 1e8 }).map((s) => new Date(Date.now() + s * 1000).toISOString()),
      fc.string({ maxLength: 30 }),
      fc.integer(),
    ),
    ttlSeconds: fc.oneof(fc.integer({ min: -10, max: 3_000_000 }), fc.double(), fc.string({ maxLength: 8 }), fc.constant(null)),
    metadata: fc.oneof(
      fc.dictionary(anyString(10), fc.oneof(fc.jsonValue({ maxDepth: 2 }), nastyString), { maxKeys: 5 }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    reason: fc.oneof(anyString(600), fc.integer()),
    perSecond: fc.oneof(fc.double(), fc.integer(), fc.string({ maxLength: 5 })),
    burst: fc.oneof(fc.double(), fc.integer(), fc.string({ maxLength: 5 })),
    email: fc.oneof(fc.emailAddress(), fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null)),
    dryRun: fc.oneof(fc.boolean(), fc.string({ maxLength: 5 }), fc.constant(null)),
    extra: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);

// Mostly valid holds, so the fuzz also reaches the database and the idempotency path.
const validHold = fc.record(
  {
    id: fc.stringMatching(/^[a-z0-9][a-z0-9._:-]{0,12}$/),
    customerEmail: fc.constantFrom('a@example.com', 'b.c+d@example.org'),
    ttlSeconds: fc.integer({ min: 1, max: 2_592_000 }),
    metadata: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  },
  { requiredKeys: ['customerEmail', 'ttlSeconds'] },
);

// A valid hold whose metadata (or another field) holds JSON nested far too deep, as text.
const deepHold = fc
  .tuple(deepJson, fc.constantFrom('metadata', 'id', 'customerEmail', 'ttlSeconds', 'reason', 'perSecond'))
  .map(([deep, field]) =>
    field === 'metadata'
      ? `{"customerEmail":"a@example.com","ttlSeconds":60,"metadata":{"x":${deep}}}`
      : `{"customerEmail":"a@example.com","ttlSeconds":60,"${field}":${deep}}`,
  );

// A body: JSON of anything, JSON of something hold-shaped, deep JSON, or raw bytes.
const body = fc.oneof(
  fc.constant(undefined),
  { weight: 2, arbitrary: validHold.map((v) => JSON.stringify(v)) },
  deepHold,
  deepJson,
  holdLike.map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constantFrom('{', '[', 'null', '""', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '\u0000', '1e999'),
);

const contentType = fc.oneof(
  { weight: 5, arbitrary: fc.constant('application/json') },
  fc.constantFrom(undefined, 'text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'application/jsonx', ''),
  fc.string({ maxLength: 30 }).filter((s) => /^[\x21-\x7e ]*$/.test(s)),
);

const query = fc.dictionary(
  fc.oneof(fc.constantFrom('state', 'limit', 'cursor'), fc.string({ maxLength: 8 })),
  fc.oneof(anyString(40), fc.constantFrom('pending', 'sent', '0', '-1', '501', '1e3', 'NaN'), tamperedCursor),
  { maxKeys: 4 },
);

const ROUTES: Array<[method: string, path: (id: string) => string]> = [
  ['POST', () => '/v1/holds'],
  ['GET', (id) => `/v1/holds/${id}`],
  ['POST', (id) => `/v1/holds/${id}/confirm`],
  ['POST', (id) => `/v1/holds/${id}/cancel`],
  ['GET', () => '/v1/intents'],
  ['GET', (id) => `/v1/intents/${id}`],
  ['POST', (id) => `/v1/intents/${id}/replay`],
  ['POST', () => '/v1/delivery/pause'],
  ['POST', () => '/v1/delivery/resume'],
  ['GET', () => '/v1/rate-limit'],
  ['PUT', () => '/v1/rate-limit'],
  ['GET', () => '/v1/retention'],
  ['POST', () => '/v1/retention/prune'],
  ['POST', () => '/v1/erasures'],
  ['GET', () => '/v1/tenants'],
  ['GET', (id) => `/v1/tenants/${id}`],
  ['PUT', (id) => `/v1/tenants/${id}`],
  ['DELETE', (id) => `/v1/tenants/${id}`],
  ['GET', () => '/metrics'],
];

function assertDocumented(res: { statusCode: number; body: string }, what: string): void {
  expect(res.statusCode, `${what} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  if (res.statusCode >= 400) {
    expect([400, 401, 404, 405, 409, 413, 415], what).toContain(res.statusCode);
    const parsed = JSON.parse(res.body) as { error: { code: unknown; message: unknown } };
    expect(typeof parsed.error.code, what).toBe('string');
    expect(typeof parsed.error.message, what).toBe('string');
  }
}

// Proof, per route, that its own runs got past validation: each kind of
// refusal and a success were answered at least once.
const MUST_SEE: Record<string, number[]> = {
  'POST /v1/holds': [201, 400, 401, 415],
  'GET /v1/intents': [200, 400],
};

describe('fuzz: no input yields a 5xx', () => {
  it.each(ROUTES.map(([method, path]) => [`${method} ${path(':id')}`, method, path] as const))('%s', async (name, method, path) => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(rawSegment, body, contentType, query, fc.boolean(), async (segment, payload, type, q, authed) => {
        const qs = new URLSearchParams(q).toString();
        const url = path(segment) + (qs ? `?${qs}` : '');
        const headers: Record<string, string> = {};
        if (authed) headers.authorization = `Bearer ${TOKEN}`;
        if (type !== undefined && payload !== undefined) headers['content-type'] = type;
        const res = await h.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
        assertDocumented(res, `${method} ${url} [${type}] ${String(payload).slice(0, 120)}`);
        seen.add(res.statusCode);
      }),
      { numRuns: RUNS },
    );
    for (const status of MUST_SEE[name] ?? []) expect(seen, `${name} answered ${[...seen].join(',')}`).toContain(status);
  });

  it('random paths and methods anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        fc.array(rawSegment, { minLength: 0, maxLength: 5 }),
        body,
        async (method, segments, payload) => {
          const url = '/' + segments.join('/');
          const res = await h.app.inject({
            method: method as 'GET',
            url,
            headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
            ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}),
          });
          if (method === 'HEAD') expect(res.statusCode).toBeLessThan(500);
          else assertDocumented(res, `${method} ${url}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('unstorable text in any string of a hold is a 400 naming that field', async () => {
    const placed = fc.oneof(
      nastyString.map((bad) => ({ field: 'id', body: { id: `a${bad}`, customerEmail: 'a@example.com', ttlSeconds: 60 } })),
      nastyString.map((bad) => ({ field: 'customerEmail', body: { customerEmail: `a${bad}@example.com`, ttlSeconds: 60 } })),
      fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), nastyString).map(([key, bad]) => ({
        field: `metadata.${key}`,
        body: { customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { [key]: bad } },
      })),
      fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), nastyString).map(([key, bad]) => ({
        field: `metadata.${key}.0`,
        body: { customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { [key]: [bad] } },
      })),
      nastyString.map((bad) => ({ field: 'metadata', body: { customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { [bad]: 1 } } })),
    );
    await fc.assert(
      fc.asyncProperty(placed, async ({ field, body }) => {
        const res = await h.call('POST', '/v1/holds', JSON.stringify(body));
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().error).toMatchObject({ code: 'validation_error', field });
      }),
      { numRuns: RUNS },
    );
  });

  it('unstorable text in a pause reason is a 400 naming reason, and the pause state is untouched', async () => {
    const before = (await h.call('GET', '/v1/delivery')).json();
    await fc.assert(
      fc.asyncProperty(nastyString, async (reason) => {
        const res = await h.call('POST', '/v1/delivery/pause', JSON.stringify({ reason }));
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().error).toMatchObject({ code: 'validation_error', field: 'reason' });
      }),
      { numRuns: RUNS },
    );
    expect((await h.call('GET', '/v1/delivery')).json()).toEqual(before);
  });

  it('JSON nested thousands deep anywhere in a hold is a 400, never a stack overflow', async () => {
    await fc.assert(
      fc.asyncProperty(deepHold, async (text) => {
        const res = await h.call('POST', '/v1/holds', text);
        expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
        expect(res.json().error.code).toBe('validation_error');
      }),
      { numRuns: 50 },
    );
  });

  it('a tampered cursor is a 400 naming cursor (or, by chance, a valid page)', async () => {
    await fc.assert(
      fc.asyncProperty(tamperedCursor, async (cursor) => {
        const res = await h.call('GET', `/v1/intents?cursor=${encodeURIComponent(cursor)}`);
        expect([200, 400], res.body).toContain(res.statusCode);
        if (res.statusCode === 400) expect(res.json().error).toMatchObject({ code: 'validation_error', field: 'cursor' });
      }),
      { numRuns: RUNS },
    );
  });

  it('the process still serves after the fuzz', async () => {
    // Its own fuzz first, so that it means the same run alone or in any order.
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), rawSegment, body, fc.boolean(), async ([method, path], segment, payload, authed) => {
        await h.app.inject({
          method: method as 'GET',
          url: path(segment),
          headers: { 'content-type': 'application/json', ...(authed ? { authorization: `Bearer ${TOKEN}` } : {}) },
          ...(payload !== undefined ? { payload } : {}),
        });
      }),
      { numRuns: 50 },
    );
    const res = await h.call('GET', '/v1/holds/known');
    expect(res.statusCode).toBe(200);
  });
});
