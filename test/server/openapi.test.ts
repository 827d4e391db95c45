import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { packageVersion } from '../../src/runtime/version.js';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('openapi');
});
afterAll(() => h.close());

type FullDocument = {
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> }>>;
  components: { schemas: Record<string, Record<string, unknown>> };
};

type Document = { openapi: string; info: { version: string }; paths: Record<string, Record<string, { parameters?: Array<{ name: string }> }>> };

async function fetchDocument(): Promise<Document> {
  const response = await h.call('GET', '/v1/openapi.json');
  expect(response.statusCode).toBe(200);
  return response.json() as Document;
}

describe('GET /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const document = await fetchDocument();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe(packageVersion());
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('covers every route registered under /v1, and names no route that is not', async () => {
    const routes: string[] = [];
    const app = buildApp({ pool: h.db.pool, schema: h.db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKEN });
    // The /v1 plugins load at ready(), after this hook, so each of their routes passes through it.
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD' && route.url.startsWith('/v1')) routes.push(`${method.toLowerCase()} ${route.url.replace(/:([A-Za-z]+)/g, '{$1}')}`);
      }
    });
    await app.ready();
    await app.close();
    const document = await fetchDocument();
    const documented = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/v1'))
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`));
    expect(routes.length).toBeGreaterThan(20);
    expect([...routes].sort()).toEqual([...documented].sort());
    // Outside /v1: health and metrics, open to anyone.
    expect(Object.keys(document.paths).filter((path) => !path.startsWith('/v1')).sort()).toEqual(['/healthz', '/metrics']);
  });

  it("describes query parameters and bodies from the routes' own schemas", async () => {
    const document = await fetchDocument();
    expect(document.paths['/v1/holds']!.get!.parameters!.map((p) => p.name)).toEqual(['status', 'tenant', 'limit', 'cursor']);
    expect(document.paths['/v1/intents']!.get!.parameters!.map((p) => p.name)).toEqual(['state', 'tenant', 'limit', 'cursor']);
    const createBody = JSON.stringify(document.paths['/v1/holds']!.post);
    expect(createBody).toContain('ttlSeconds');
    expect(createBody).toContain('2592000');
    // The tenant's rule as a pattern, the one the route applies; and the hold and intent answers carry it.
    const tenant = (document.paths['/v1/holds']!.post as unknown as { requestBody: { content: { 'application/json': { schema: { properties: Record<string, { pattern?: string }> } } } } })
      .requestBody.content['application/json'].schema.properties['tenant']!;
    expect(new RegExp(tenant.pattern!).test('')).toBe(true);
    expect(new RegExp(tenant.pattern!).test('acme-eu.1')).toBe(true);
    expect(new RegExp(tenant.pattern!).test('acme eu')).toBe(false);
    const responses = (path: string, method: string) => JSON.stringify((document.paths[path]![method] as unknown as { responses: unknown }).responses);
    expect(responses('/v1/holds', 'post')).toContain('tenant');
    expect(responses('/v1/intents/{id}', 'get')).toContain('tenant');
    expect(JSON.stringify(document.paths['/v1/delivery/pause']!.post)).toContain('forSeconds');
    // Tenant policies: the body from tenantPolicySchema (unknown fields refused), the path's tenant by the tenant rule.
    expect(document.paths['/v1/tenants']!.get!.parameters!.map((p) => p.name)).toEqual(['limit', 'cursor', 'top']);
    const policyPut = document.paths['/v1/tenants/{tenant}']!.put as unknown as {
      parameters: Array<{ name: string; schema: { pattern?: string } }>;
      requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown>; additionalProperties?: boolean } } } };
      responses: Record<string, unknown>;
    };
    const policySchema = policyPut.requestBody.content['application/json'].schema;
    expect(Object.keys(policySchema.properties)).toEqual(['perSecond', 'burst', 'weight', 'account', 'from', 'replyTo']);
    expect(policySchema.additionalProperties).toBe(false);
    expect(Object.keys(policyPut.responses)).toEqual(expect.arrayContaining(['200', '201', '400']));
    const pathTenant = new RegExp(policyPut.parameters[0]!.schema.pattern!);
    expect([pathTenant.test(''), pathTenant.test('acme'), pathTenant.test('acme corp')]).toEqual([true, true, false]);
    expect(Object.keys((document.paths['/v1/tenants/{tenant}']!.delete as unknown as { responses: object }).responses)).toEqual(expect.arrayContaining(['204', '404']));
  });

  it('lists every refusal of every operation, in the one Error component', async () => {
    const document = (await fetchDocument()) as unknown as FullDocument;
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));
    expect(operations.length).toBeGreaterThan(40);
    const missing: string[] = [];
    for (const { path, method, operation } of operations) {
      const listed = Object.keys(operation.responses);
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      const expected = ['503', ...(open ? [] : ['401', '403', '429']), ...(!open && method !== 'get' ? ['413', '415'] : [])];
      for (const status of expected) if (!listed.includes(status)) missing.push(`${method} ${path} ${status}`);
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400 || path === '/healthz') continue;
        const schema = response.content?.['application/json']?.schema;
        if (schema?.$ref !== '#/components/schemas/Error') missing.push(`${method} ${path} ${status} is not the Error component`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares timestamps once, as components, and answers as closed objects', async () => {
    const document = (await fetchDocument()) as unknown as FullDocument;
    const schemas = document.components.schemas;
    expect(schemas['Timestamp']).toMatchObject({ type: 'string', format: 'date-time' });
    expect(schemas['Hold']).toMatchObject({ additionalProperties: false, properties: { expiresAt: { $ref: '#/components/schemas/Timestamp' } } });
    // The RFC 3339 pattern zod writes for a date-time appears once (the TimestampInput component), not per field.
    const text = JSON.stringify(document);
    const pattern = JSON.stringify((schemas['TimestampInput'] as { pattern: string }).pattern);
    expect(text.split(pattern).length - 1).toBe(1);
    // Every object of every answer is closed: a field the API answers is a field the document declares.
    const open: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((child, i) => walk(child, `${at}/${i}`));
      if (!node || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      if (schema['type'] === 'object' && schema['properties'] && schema['additionalProperties'] !== false) open.push(at);
      for (const [key, child] of Object.entries(schema)) walk(child, `${at}/${key}`);
    };
    for (const [name, schema] of Object.entries(schemas)) if (!name.endsWith('Input')) walk(schema, name);
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) walk(operation.responses, `${method} ${path}`);
    }
    expect(open).toEqual([]);
  });

  it('describes the intent and the hold timeline as the API answers them', async () => {
    const document = (await fetchDocument()) as unknown as FullDocument;
    const schemas = document.components.schemas as Record<string, { properties: Record<string, { type?: string; $ref?: string; items?: unknown }>; required: string[] }>;
    const detail = schemas['IntentDetail']!;
    expect(detail.properties['attempts']).toMatchObject({ type: 'array', items: { $ref: '#/components/schemas/Attempt' } });
    for (const field of ['failedAttempts', 'finishedAt', 'lastError', 'leased', 'leaseExpiresAt', 'leaseExpirations', 'replays', 'message']) {
      expect(detail.required, field).toContain(field);
    }
    const timeline = schemas['HoldTimeline']!;
    expect(Object.keys(timeline.properties)).toEqual(expect.arrayContaining(['hold', 'intent', 'message', 'moments', 'outcome', 'lateness', 'attempts', 'events', 'emails', 'life']));
    const ok = (path: string, method: string) => document.paths[path]![method]!.responses['200']!.content!['application/json']!.schema;
    expect(ok('/v1/intents/{id}', 'get')).toEqual({ $ref: '#/components/schemas/IntentDetail' });
    expect(ok('/v1/holds/{id}', 'get')).toEqual({ $ref: '#/components/schemas/HoldTimeline' });
  });

  it('is served without a token (a generator fetches it first), while the routes it describes still need one', async () => {
    const open = await h.call('GET', '/v1/openapi.json', undefined, { authorization: '' });
    expect(open.statusCode).toBe(200);
    const document = open.json() as FullDocument;
    expect(document).toEqual(await fetchDocument());
    expect(document.paths['/v1/openapi.json']!['get']!.security).toEqual([]);
    expect(Object.keys(document.paths['/v1/openapi.json']!['get']!.responses)).not.toContain('401');
    expect((await h.call('GET', '/v1/status', undefined, { authorization: '' })).statusCode).toBe(401);
    // A wrong token is not an error here either: the document does not look at it.
    expect((await h.call('GET', '/v1/openapi.json', undefined, { authorization: 'Bearer not-a-token-0123456789' })).statusCode).toBe(200);
  });
});

describe('GET /v1/holds', () => {
  it('lists newest first, filters by status and pages with the cursor without skipping a hold', async () => {
    const s = ident(h.db.schema);
    // Twelve holds created at one instant (as a batch of INSERTs in one transaction would be), and three later.
    await h.db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at)
       SELECT 'same-' || lpad(i::text, 2, '0'), 'a@example.com', now() + interval '1 hour', timestamptz '2020-01-01T00:00:00.123456Z'
         FROM generate_series(1, 12) i`,
    );
    for (const id of ['later-1', 'later-2', 'later-3']) {
      await createHold(h.db.pool, { id, customerEmail: 'b@example.com', ttlSeconds: 600 }, { schema: h.db.schema });
    }
    await h.db.pool.query(`UPDATE ${s}.support_reservations SET status = 'cancelled', cancelled_at = now() WHERE id IN ('same-03', 'later-2')`);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v1/holds?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = (await h.call('GET', url)).json() as { holds: Array<{ id: string }>; nextCursor: string | null };
      seen.push(...page.holds.map((hold) => hold.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 10);
    const same = Array.from({ length: 12 }, (_, i) => `same-${String(12 - i).padStart(2, '0')}`);
    expect(seen).toEqual(['later-3', 'later-2', 'later-1', ...same]);

    const cancelled = (await h.call('GET', '/v1/holds?status=cancelled')).json() as { holds: Array<{ id: string; status: string }>; nextCursor: null };
    expect(cancelled.holds.map((hold) => hold.id)).toEqual(['later-2', 'same-03']);
    expect(cancelled.nextCursor).toBeNull();
  });

  it('400 naming the field for a bad status, limit or cursor', async () => {
    for (const [query, field] of [
      ['status=gone', 'status'],
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['cursor=bm9wZQ', 'cursor'],
      [`cursor=${Buffer.from(JSON.stringify(['1', 'bad id!'])).toString('base64url')}`, 'cursor'],
      ['other=1', 'other'],
    ] as const) {
      const response = await h.call('GET', `/v1/holds?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().error.field, query).toBe(field);
    }
  });
});

describe('PUT /v1/rate-limit and POST /v1/delivery/pause, as the CLI does them', () => {
  it('a partial update keeps the other half of the policy', async () => {
    await h.call('PUT', '/v1/rate-limit', { perSecond: 7, burst: 9 });
    expect((await h.call('PUT', '/v1/rate-limit', { perSecond: 3 })).json()).toMatchObject({ perSecond: 3, burst: 9 });
    expect((await h.call('PUT', '/v1/rate-limit', { burst: 4 })).json()).toMatchObject({ perSecond: 3, burst: 4 });
    const empty = await h.call('PUT', '/v1/rate-limit', {});
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.message).toContain('give perSecond, burst or both');
    expect((await h.call('PUT', '/v1/rate-limit', { burst: 0 })).json().error.field).toBe('burst');
  });

  it('pause takes forSeconds and lifts by itself', async () => {
    const before = Date.now();
    const paused = await h.call('POST', '/v1/delivery/pause', { reason: 'maintenance', forSeconds: 90 });
    expect(paused.statusCode).toBe(200);
    const until = new Date(paused.json().pausedUntil as string).getTime();
    expect(until).toBeGreaterThanOrEqual(before + 85_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 95_000);
    for (const forSeconds of [0, -1, 'soon', 31_536_001]) {
      const bad = await h.call('POST', '/v1/delivery/pause', { forSeconds });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.field).toBe('forSeconds');
    }
    await h.call('POST', '/v1/delivery/resume');
  });
});
