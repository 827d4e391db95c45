import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { roleAllows, tokenHash, type Role } from '../../src/model/api-tokens.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { ApiTokens, checkRouteAccess } from '../../src/server/auth.js';
import { auditList } from '../../src/tables/audit-log.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { accessApp, SAMPLES, TOKENS, type AccessApp } from '../helpers/access.js';

let db: TestDatabase;
let api: AccessApp;
beforeAll(async () => {
  db = await testDatabase('access');
  api = await accessApp(db);
});
afterAll(async () => {
  await api.app.close();
  await db.close();
});

const ROLE_TOKENS: Array<[Role, string]> = [
  ['read', TOKENS.read],
  ['operate', TOKENS.operate],
  ['admin', TOKENS.admin],
];

describe('each role against every route (generated from the route list)', () => {
  it('every /v1 route declares a role and a scope, and has a sample request here', () => {
    expect(api.routes.length).toBeGreaterThan(30);
    const undeclared = api.routes.filter((r) => !r.access).map((r) => `${r.method} ${r.url}`);
    expect(undeclared, 'routes without access(): declare their role').toEqual([]);
    const unsampled = api.routes.map((r) => `${r.method} ${r.url}`).filter((key) => !SAMPLES[key]);
    expect(unsampled, 'routes without a sample request in SAMPLES').toEqual([]);
    // Every GET is a read; nothing that changes anything is.
    for (const r of api.routes) expect(r.access!.role === 'read', `${r.method} ${r.url}`).toBe(r.method === 'GET');
  });

  it('a route registered without a role is refused at registration', () => {
    expect(() => checkRouteAccess({ method: 'POST', url: '/v1/new-thing' })).toThrow(/POST \/v1\/new-thing declares no access/);
    expect(() => checkRouteAccess({ method: 'POST', url: '/v1/x', config: { access: { role: 'operate', scope: 'fleet' } } })).not.toThrow();
  });

  it('allows each role exactly what its declaration says; a refusal is a 403 naming the role needed', async () => {
    const table: string[] = [];
    for (const route of api.routes) {
      const sample = SAMPLES[`${route.method} ${route.url}`]!;
      for (const [role, token] of ROLE_TOKENS) {
        const res = await api.call(token, route.method as 'GET', sample.url, sample.body);
        const allowed = roleAllows(role, route.access!.role);
        if (allowed) {
          expect([401, 403, 429], `${role} ${route.method} ${route.url}: ${res.body}`).not.toContain(res.statusCode);
        } else {
          expect(res.statusCode, `${role} ${route.method} ${route.url}`).toBe(403);
          expect(res.json()).toEqual({ error: { code: 'forbidden', message: `this call needs the ${route.access!.role} role; token ${role === 'read' ? 'viewer' : 'oncall'} has ${role}` } });
        }
        table.push(`${route.method} ${route.url} ${role}: ${allowed ? 'allowed' : 'forbidden'}`);
      }
    }
    expect(table.filter((l) => l.includes('admin: forbidden'))).toEqual([]);
    expect(table).toContain('POST /v1/delivery/pause read: forbidden');
    expect(table).toContain('POST /v1/erasures operate: forbidden');
    expect(table).toContain('PUT /v1/tenants/:tenant operate: forbidden');
    expect(table).toContain('POST /v1/holds operate: allowed');
  });

  it('decides before the body is read: a forbidden or unknown caller learns nothing from validation', async () => {
    const bad = { forSeconds: -1, nonsense: true };
    const forbidden = await api.call(TOKENS.read, 'POST', '/v1/delivery/pause', bad);
    expect([forbidden.statusCode, forbidden.json().error.code]).toEqual([403, 'forbidden']);
    const unknown = await api.call('not-a-token-0123456789', 'POST', '/v1/delivery/pause', bad);
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([401, 'unauthorized']);
    const broken = await api.app.inject({ method: 'PUT', url: '/v1/rate-limit', headers: { authorization: `Bearer ${TOKENS.read}`, 'content-type': 'application/json' }, payload: '{not json' });
    expect(broken.statusCode).toBe(403);
    const allowed = await api.call(TOKENS.operate, 'POST', '/v1/delivery/pause', bad);
    expect([allowed.statusCode, allowed.json().error.field]).toEqual([400, 'nonsense']);
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
  });

  it('LEASEHOLD_API_TOKEN keeps working as one admin token, named env', async () => {
    const env = await buildApp({ pool: db.pool, schema: db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKENS.admin + 'env' });
    const me = await env.inject({ method: 'GET', url: '/v1/token', headers: { authorization: `Bearer ${TOKENS.admin}env` } });
    expect(me.json()).toEqual({ name: 'env', role: 'admin', tenants: null });
    await env.close();
  });

  it('refuses an expired token with 401 token_expired, once its time has passed (time moved, not waited for)', async () => {
    const res = await api.call(TOKENS.expired, 'GET', '/v1/status');
    expect([res.statusCode, res.json().error.code]).toEqual([401, 'token_expired']);
    const before = await buildApp({
      pool: db.pool, schema: db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(),
      tokens: api.tokens, authNow: () => Date.parse('2025-12-31T23:59:59Z'),
    });
    expect((await before.inject({ method: 'GET', url: '/v1/token', headers: { authorization: `Bearer ${TOKENS.expired}` } })).json().name).toBe('old-app');
    await before.close();
  });
});

describe('rotation: several tokens active at once, reloaded without a restart', () => {
  it('adds a new token beside the old, then removes the old, while the app keeps serving; a broken file changes nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-tokens-'));
    const file = path.join(dir, 'tokens.yaml');
    const v1 = 'rotate-v1-token-0123456789abcdef';
    const v2 = 'rotate-v2-token-0123456789abcdef';
    writeFileSync(file, `tokens:\n  - { name: app-v1, role: operate, sha256: ${tokenHash(v1)} }\n`);
    const tokens = new ApiTokens({ entries: await ApiTokens.readFile(file), file });
    const app = buildApp({ pool: db.pool, schema: db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), tokens });
    const status = async (token: string) => (await app.inject({ method: 'GET', url: '/v1/token', headers: { authorization: `Bearer ${token}` } })).statusCode;
    try {
      expect([await status(v1), await status(v2)]).toEqual([200, 401]);
      writeFileSync(file, `tokens:\n  - { name: app-v1, role: operate, sha256: ${tokenHash(v1)} }\n  - { name: app-v2, role: operate, sha256: ${tokenHash(v2)} }\n`);
      expect(await tokens.reload()).toEqual(['app-v1', 'app-v2']);
      expect([await status(v1), await status(v2)]).toEqual([200, 200]);
      // A broken file: refused with the entry and field, and both tokens stay in force.
      writeFileSync(file, `tokens:\n  - { name: app-v2, role: operat, sha256: ${tokenHash(v2)} }\n`);
      await expect(tokens.reload()).rejects.toThrow(new ConfigError('LEASEHOLD_API_TOKENS_FILE', 'tokens[0] (app-v2).role: must be one of read, operate, admin'));
      expect([await status(v1), await status(v2)]).toEqual([200, 200]);
      writeFileSync(file, `tokens:\n  - { name: app-v2, role: operate, sha256: ${tokenHash(v2)} }\n`);
      await tokens.reload();
      expect([await status(v1), await status(v2)]).toEqual([401, 200]);
    } finally {
      await app.close();
    }
  });
});

describe('a refused-token storm', () => {
  it('locks the address out after N failures a minute (429, even for a right token), records it once, and samples the refusals', async () => {
    const storm = await accessApp(db, 5);
    const since = new Date();
    try {
      const answers: number[] = [];
      for (let i = 0; i < 200; i++) answers.push((await storm.call(`guess-${i}-0123456789abcdef`, 'GET', '/v1/status')).statusCode);
      expect(answers.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(new Set(answers.slice(5))).toEqual(new Set([429]));
      const locked = await storm.call(TOKENS.admin, 'GET', '/v1/status');
      expect(locked.statusCode).toBe(429);
      expect(locked.headers['retry-after']).toBe('300');
      expect(locked.json().error.code).toBe('too_many_failures');
      // Another address is not affected.
      expect((await storm.app.inject({ method: 'GET', url: '/v1/status', remoteAddress: '10.9.9.9', headers: { authorization: `Bearer ${TOKENS.admin}` } })).statusCode).toBe(200);

      const metrics = await storm.metrics.registry.metrics();
      expect(metrics).toMatch(/^leasehold_api_auth_refused_total\{reason="unauthorized"\} 5$/m);
      expect(metrics).toMatch(/^leasehold_api_auth_refused_total\{reason="locked"\} 196$/m);
      expect(metrics).toMatch(/^leasehold_api_auth_lockouts_total 1$/m);
      const refused = await auditList(db.pool, db.schema, { limit: 500, since, action: 'auth.refused' });
      expect(refused.entries.length).toBe(5);
      expect(refused.entries.every((e) => e.actor === 'unknown' && (e.detail as { reason: string }).reason === 'unauthorized')).toBe(true);
      const lockouts = await auditList(db.pool, db.schema, { limit: 500, since, action: 'auth.locked' });
      expect(lockouts.entries.map((e) => e.target)).toEqual(['127.0.0.1']);
      // No token text in the audit log.
      expect(JSON.stringify([refused, lockouts])).not.toMatch(/guess-/);

      storm.clock.now += 300_000;
      expect((await storm.call(TOKENS.admin, 'GET', '/v1/status')).statusCode).toBe(200);
    } finally {
      await storm.app.close();
    }
  });

  it('records refusals of one token name at most 10 times a minute, and says how many it left out', async () => {
    const since = new Date();
    for (let i = 0; i < 40; i++) expect((await api.call(TOKENS.read, 'POST', '/v1/delivery/pause')).statusCode).toBe(403);
    const first = await auditList(db.pool, db.schema, { limit: 500, since, action: 'auth.refused' });
    expect(first.entries.filter((e) => e.actor === 'viewer').length).toBeLessThanOrEqual(10);
    api.clock.now += 60_000;
    await api.call(TOKENS.read, 'POST', '/v1/delivery/pause');
    const next = (await auditList(db.pool, db.schema, { limit: 1, since, action: 'auth.refused' })).entries[0]!;
    expect(next.actor).toBe('viewer');
    expect(next.detail).toMatchObject({ reason: 'forbidden', needs: 'operate', has: 'read', route: '/v1/delivery/pause', notRecorded: expect.any(Number) });
    expect((next.detail as { notRecorded: number }).notRecorded).toBeGreaterThanOrEqual(30);
  });
});
