import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiHarness, TOKEN, type ApiHarness } from './harness.js';

/**
 * Random bodies, params, queries, content types and paths at every route:
 * whatever arrives, the answer is a documented 4xx (or a success) in the one
 * error shape, never a 5xx, and the process keeps serving.
 */

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_fuzz');
  await h.call('POST', '/v1/holds', { id: 'known', customerEmail: 'k@example.com', ttlSeconds: 600 });
});
afterAll(() => h.close());

const RUNS = 200;

const rawSegment = fc.oneof(
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
  fc.constantFrom('known', 'reservation-expired:known', '..', '%2e%2e', '%00', '%ZZ', '%E0%A4%A', 'a'.repeat(300), '%', '-x', ':x', '#'),
  fc.stringMatching(/^[A-Za-z0-9._:%-]{1,60}$/),
);

const holdLike = fc.record(
  {
    id: fc.oneof(fc.string({ maxLength: 140 }), fc.integer(), fc.constant(null)),
    customerEmail: fc.oneof(fc.emailAddress(), fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null)),
    expiresAt: fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.integer({ min: -1e6, max: 1e8 }).map((s) => new Date(Date.now() + s * 1000).toISOString()),
      fc.string({ maxLength: 30 }),
      fc.integer(),
    ),
    ttlSeconds: fc.oneof(fc.integer({ min: -10, max: 3_000_000 }), fc.double(), fc.string({ maxLength: 8 }), fc.constant(null)),
    metadata: fc.oneof(fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }), fc.jsonValue({ maxDepth: 2 })),
    reason: fc.oneof(fc.string({ maxLength: 600 }), fc.integer()),
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

// A body: JSON of anything, JSON of something hold-shaped, or raw bytes.
const body = fc.oneof(
  fc.constant(undefined),
  validHold.map((v) => JSON.stringify(v)),
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
  fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('pending', 'sent', '0', '-1', '501', '1e3', 'NaN')),
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
  ['GET', () => '/metrics'],
];

function assertDocumented(res: { statusCode: number; body: string }, what: string): void {
  expect(res.statusCode, `${what} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  if (res.statusCode >= 400) {
    expect([400, 401, 404, 409, 413, 415], what).toContain(res.statusCode);
    const parsed = JSON.parse(res.body) as { error: { code: unknown; message: unknown } };
    expect(typeof parsed.error.code, what).toBe('string');
    expect(typeof parsed.error.message, what).toBe('string');
  }
}

const seen = new Map<string, Set<number>>();

describe('fuzz: no input yields a 5xx', () => {
  it.each(ROUTES.map(([method, path]) => [`${method} ${path(':id')}`, method, path] as const))('%s', async (_name, method, path) => {
    await fc.assert(
      fc.asyncProperty(rawSegment, body, contentType, query, fc.boolean(), async (segment, payload, type, q, authed) => {
        const qs = new URLSearchParams(q).toString();
        const url = path(segment) + (qs ? `?${qs}` : '');
        const headers: Record<string, string> = {};
        if (authed) headers.authorization = `Bearer ${TOKEN}`;
        if (type !== undefined && payload !== undefined) headers['content-type'] = type;
        const res = await h.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
        assertDocumented(res, `${method} ${url} [${type}] ${String(payload).slice(0, 120)}`);
        const key = `${method} ${path(':id')}`;
        seen.set(key, (seen.get(key) ?? new Set()).add(res.statusCode));
      }),
      { numRuns: RUNS },
    );
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

  it('the fuzz reached past validation (successes and each kind of refusal were seen)', () => {
    const create = seen.get('POST /v1/holds')!;
    for (const status of [201, 400, 401, 415]) expect(create, [...create].join(',')).toContain(status);
    expect(seen.get('GET /v1/intents')).toContain(200);
  });

  it('the process still serves after the fuzz', async () => {
    const res = await h.call('GET', '/v1/holds/known');
    expect(res.statusCode).toBe(200);
  });
});
