import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { parseTokensFile, tokenHash } from '../../src/model/api-tokens.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { ApiTokens, type RouteAccess } from '../../src/server/auth.js';
import type { TestDatabase } from './database.js';
import { checkContract } from './server.js';

/** Tokens of every role, a tenant-limited one and an expired one, and the API built on them (test/server/access*.test.ts, audit.test.ts). */

export const TOKENS = {
  read: 'read-token-0123456789abcdef',
  operate: 'operate-token-0123456789abcdef',
  admin: 'admin-token-0123456789abcdef',
  acme: 'acme-token-0123456789abcdef',
  expired: 'expired-token-0123456789abcdef',
};

export function tokensFile(extra = ''): string {
  return `tokens:
  - { name: viewer, role: read, sha256: ${tokenHash(TOKENS.read)} }
  - { name: oncall, role: operate, sha256: ${tokenHash(TOKENS.operate)} }
  - { name: boss, role: admin, sha256: ${tokenHash(TOKENS.admin)} }
  - { name: acme-app, role: operate, tenants: [acme], sha256: ${tokenHash(TOKENS.acme)} }
  - { name: old-app, role: admin, expiresAt: 2026-01-01T00:00:00Z, sha256: ${tokenHash(TOKENS.expired)} }
${extra}`;
}

export interface AccessApp {
  app: FastifyInstance;
  metrics: Metrics;
  tokens: ApiTokens;
  /** Every /v1 route under the token, as registered (method, pattern, declared access). */
  routes: Array<{ method: string; url: string; access: RouteAccess | undefined }>;
  clock: { now: number };
  call(token: string | undefined, method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

/** The API with the tokens file above, a clock the test moves, and a lockout at `failuresPerMinute`. */
export async function accessApp(db: TestDatabase, failuresPerMinute = 100_000): Promise<AccessApp> {
  const metrics = createMetrics();
  const tokens = new ApiTokens({ entries: parseTokensFile(tokensFile()) });
  const clock = { now: Date.parse('2026-06-01T00:00:00Z') };
  const app = buildApp({
    pool: db.pool,
    schema: db.schema,
    config: { ...loadConfig({}), authFailuresPerMinute: failuresPerMinute, authLockoutS: 300 },
    logger: silentLogger,
    metrics,
    tokens,
    authNow: () => clock.now,
  });
  const routes: AccessApp['routes'] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      // The webhooks prove themselves their own way; the OpenAPI document is open (test/server/openapi.test.ts).
      if (method === 'HEAD' || !route.url.startsWith('/v1') || route.url.startsWith('/v1/webhooks') || route.url === '/v1/openapi.json') continue;
      routes.push({ method, url: route.url, access: route.config?.access });
    }
  });
  await app.ready();
  checkContract(app);
  return {
    app,
    metrics,
    tokens,
    routes,
    clock,
    call: (token, method, url, body, headers = {}) =>
      app.inject({
        method,
        url,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      }),
  };
}

/**
 * One request for every /v1 route, by its registered pattern. A new route
 * without an entry here fails the table test: say who may call it (access()
 * in its route options) and give it a sample request.
 */
export const SAMPLES: Record<string, { url: string; body?: unknown }> = {
  'POST /v1/holds': { url: '/v1/holds', body: { customerEmail: 'access@example.com', ttlSeconds: 600 } },
  'GET /v1/holds': { url: '/v1/holds' },
  'GET /v1/holds/:id': { url: '/v1/holds/missing' },
  'POST /v1/holds/:id/confirm': { url: '/v1/holds/missing/confirm' },
  'POST /v1/holds/:id/cancel': { url: '/v1/holds/missing/cancel' },
  'POST /v1/holds/:id/extend': { url: '/v1/holds/missing/extend', body: { ttlSeconds: 60 } },
  'GET /v1/intents': { url: '/v1/intents' },
  'GET /v1/intents/:id': { url: '/v1/intents/missing' },
  'POST /v1/intents/:id/replay': { url: '/v1/intents/missing/replay' },
  'GET /v1/webhook-deliveries': { url: '/v1/webhook-deliveries' },
  'POST /v1/webhook-deliveries/:id/replay': { url: '/v1/webhook-deliveries/msg_missing/replay' },
  'POST /v1/intents/:id/move': { url: '/v1/intents/missing/move', body: { account: 'default' } },
  'GET /v1/delivery': { url: '/v1/delivery' },
  'POST /v1/delivery/pause': { url: '/v1/delivery/pause', body: { reason: 'access table' } },
  'POST /v1/delivery/resume': { url: '/v1/delivery/resume' },
  'GET /v1/rate-limit': { url: '/v1/rate-limit' },
  'PUT /v1/rate-limit': { url: '/v1/rate-limit', body: { perSecond: 10 } },
  'GET /v1/accounts': { url: '/v1/accounts' },
  'GET /v1/accounts/:name': { url: '/v1/accounts/default' },
  'PUT /v1/accounts/:name/rate-limit': { url: '/v1/accounts/default/rate-limit', body: { burst: 10 } },
  'POST /v1/accounts/:name/pause': { url: '/v1/accounts/default/pause', body: { reason: 'access table' } },
  'POST /v1/accounts/:name/resume': { url: '/v1/accounts/default/resume' },
  'GET /v1/status': { url: '/v1/status' },
  'GET /v1/status/sends': { url: '/v1/status/sends?seconds=10' },
  'GET /v1/status/history': { url: '/v1/status/history?seconds=60' },
  'GET /v1/retention': { url: '/v1/retention' },
  'POST /v1/retention/prune': { url: '/v1/retention/prune', body: { dryRun: true } },
  'POST /v1/erasures': { url: '/v1/erasures', body: { address: 'nobody@example.com' } },
  'GET /v1/suppressions': { url: '/v1/suppressions' },
  'POST /v1/suppressions': { url: '/v1/suppressions', body: { address: 'suppressed@example.com' } },
  'DELETE /v1/suppressions/:address': { url: '/v1/suppressions/suppressed%40example.com' },
  'GET /v1/tenants': { url: '/v1/tenants' },
  'GET /v1/tenants/:tenant': { url: '/v1/tenants/acme' },
  'PUT /v1/tenants/:tenant': { url: '/v1/tenants/acme', body: { weight: 2 } },
  'DELETE /v1/tenants/:tenant': { url: '/v1/tenants/acme' },
  'POST /v1/tenants/:tenant/pause': { url: '/v1/tenants/acme/pause', body: { reason: 'access table' } },
  'POST /v1/tenants/:tenant/resume': { url: '/v1/tenants/acme/resume' },
  'GET /v1/audit': { url: '/v1/audit' },
  'GET /v1/token': { url: '/v1/token' },
};

