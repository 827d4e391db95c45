import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type pg from 'pg';
import type { Config } from '../config.js';
import { createDatabaseMetrics } from '../read/db-metrics.js';
import { processMetricsRegistry } from '../observability/process-metrics.js';
import type { AccountWebhook, WebhookSettings } from '../events/webhook-config.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { Operations } from '../ops/operations.js';
import type { Accounts } from '../model/accounts.js';
import { ApiTokens, bearerAuth, checkRouteAccess } from './auth.js';
import { auditInsert } from '../tables/audit-log.js';
import { DEFAULTS } from '../defaults.js';
import { auditRoutes } from './routes/audit.js';
import type { ApiContext, HoldSettings } from './context.js';
import { ApiError, clientErrorHandler, errorHandler, toErrorResponse } from './errors.js';
import { RouteMethods } from './route-methods.js';
import { deliveryRoutes } from './routes/delivery.js';
import { accountRoutes } from './routes/accounts.js';
import { holdRoutes } from './routes/holds.js';
import { openApiRoutes, registerOpenApi } from './openapi.js';
import { serializerCompiler, validatorCompiler } from './validation.js';
import { intentRoutes } from './routes/intents.js';
import { appWebhookRoutes } from './routes/app-webhooks.js';
import { opsRoutes } from './routes/ops.js';
import { retentionRoutes } from './routes/retention.js';
import { DEFAULT_RETENTION } from '../model/retention-policy.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { statusRoutes } from './routes/status.js';
import { sendRateRoutes } from './routes/send-rate.js';
import { historyRoutes } from './routes/history.js';
import { suppressionRoutes } from './routes/suppressions.js';
import { tenantRoutes } from './routes/tenants.js';
import { webhookRoutes } from './routes/webhooks.js';

export interface ApiOptions {
  pool: pg.Pool;
  schema: string;
  /** `retention` defaults to the documented policy when left out. */
  config: Pick<Config, 'expiryPromiseS' | 'emailPromiseS' | 'ratePerSecond' | 'rateBurst'> &
    Partial<Pick<Config, 'retention' | 'tenantMetricsTop' | 'authFailuresPerMinute' | 'authLockoutS' | HoldSettings>>;
  logger: Logger;
  /** Process-local counters; /metrics serves them next to the database gauges. */
  metrics: Metrics;
  /** One `admin` bearer token for /v1, named `env` (/healthz and /metrics are open). */
  apiToken?: string;
  /** The named tokens with roles (LEASEHOLD_API_TOKENS_FILE) and `apiToken`; `reload()` on SIGHUP. Default: `apiToken` alone. */
  tokens?: ApiTokens;
  /** The time the token check counts refusals and expiries by (ms since the epoch); tests move it. Default Date.now. */
  authNow?: () => number;
  /** Provider webhook verification (see webhookSettingsFromEnv); unset: every webhook answers 401 webhook_not_configured. */
  webhooks?: WebhookSettings;
  /** The provider accounts (providers/registry.ts accountsFromConfig); default: one, `default`, at the configured rate. */
  accounts?: Accounts;
  /** Each account's webhook endpoint, POST /v1/webhooks/<account> (events/webhook-config.ts accountWebhooks). */
  accountWebhooks?: ReadonlyMap<string, AccountWebhook>;
}

/** The largest body accepted: a hold with 16 KiB of metadata fits with room to spare. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * The HTTP API v1 as a Fastify instance, not yet listening (tests call
 * `app.inject`). Every input error is answered with the documented 4xx and
 * the one error shape; request bodies are never logged.
 */
export function buildApp(options: ApiOptions): FastifyInstance {
  const logger = options.logger.child({ component: 'api' });
  const app = Fastify({
    // Fastify's own request logging is off (it would carry raw URLs); one
    // line per request with the route pattern is logged below, never a body.
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: 1000 },
    // Fastify's own 503 while closing has its own body shape; ours (below) has the one error shape.
    return503OnClosing: false,
    // A caller's x-request-id (when it is a sane one) is kept, so the audit
    // log joins with its own logs; otherwise a fresh UUID. Echoed on every answer.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    // Oversized headers and non-HTTP bytes, refused before any route.
    clientErrorHandler: clientErrorHandler(logger),
    // Malformed URLs (bad percent-encoding) never reach a route.
    frameworkErrors: (error, _request, reply) => {
      const { statusCode, body } = toErrorResponse(error);
      void (reply as unknown as FastifyReply).code(statusCode).send(body);
    },
  }) as unknown as FastifyInstance;

  // JSON only (text/plain and everything else is 415); an empty JSON body
  // means "no body", so `curl -X POST -H 'content-type: application/json'` works.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    json(request, text, done);
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  const tokens = options.tokens ?? new ApiTokens({ envToken: options.apiToken });
  const authenticate = bearerAuth({
    tokens,
    metrics: options.metrics,
    logger,
    failuresPerMinute: options.config.authFailuresPerMinute ?? DEFAULTS.authFailuresPerMinute,
    lockoutSeconds: options.config.authLockoutS ?? DEFAULTS.authLockoutS,
    ...(options.authNow ? { now: options.authNow } : {}),
    audit: (actor, record) => auditInsert(options.pool, options.schema, actor, record),
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // A request already in flight when the close began: Node would keep its
    // connection for the keep-alive timeout (72 s) and the close would wait it out.
    if (closing) reply.header('connection', 'close');
  });
  app.setErrorHandler(errorHandler(logger));
  // Each route's zod schemas check its input and shape its answer (server/validation.ts), and make the OpenAPI document.
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerOpenApi(app);
  // A request on a kept-alive connection while the server closes: 503 (and, from onSend, connection: close).
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    const { statusCode, body } = toErrorResponse(new ApiError(503, 'shutting_down', 'this server is shutting down; try again'));
    return reply.code(statusCode).send(body);
  });
  // Every route's methods, so a known path asked with another method is a 405 naming them (Allow), not a 404.
  const routeMethods = new RouteMethods();
  app.addHook('onRoute', (route) => routeMethods.add(route.method, route.url));
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0]!;
    // Under /v1 the token is checked before "no such route" (and before
    // "wrong method"): otherwise a stranger could tell existing routes
    // (401) from missing ones (404).
    if (path === '/v1' || path.startsWith('/v1/')) await authenticate(request, reply, undefined);
    const allowed = routeMethods.allowed(path);
    if (allowed.length > 0) {
      const message = `${path.slice(0, 200)} does not take ${request.method}; it takes ${allowed.join(', ')}`;
      const { statusCode, body } = toErrorResponse(new ApiError(405, 'method_not_allowed', message));
      return reply.code(statusCode).header('allow', allowed.join(', ')).send(body);
    }
    const { statusCode, body } = toErrorResponse(new ApiError(404, 'not_found', `no route ${request.method} ${path.slice(0, 200)}`));
    return reply.code(statusCode).send(body);
  });
  app.addHook('onResponse', async (request, reply) => {
    logger.debug(
      { event: 'http.request', method: request.method, route: request.routeOptions.url ?? null, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  const ops = new Operations({
    pool: options.pool,
    schema: options.schema,
    initialRate: { perSecond: options.config.ratePerSecond, burst: options.config.rateBurst },
    logger,
    ...(options.accounts ? { accounts: options.accounts } : {}),
  });
  const ctx: ApiContext = { pool: options.pool, schema: options.schema, config: options.config, logger, metrics: options.metrics, ops };
  const databaseMetrics = createDatabaseMetrics({
    failover: ops.accounts.failover,
    db: options.pool,
    schema: options.schema,
    promises: options.config,
    retention: options.config.retention ?? DEFAULT_RETENTION,
    ...(options.config.tenantMetricsTop ? { tenantMetricsTop: options.config.tenantMetricsTop } : {}),
  });
  // In a plugin, like every route: plugins load after @fastify/swagger, which sees only the routes added after it.
  void app.register(async (root) => {
    opsRoutes(root.withTypeProvider<ZodTypeProvider>(), ctx, [options.metrics.registry, databaseMetrics, processMetricsRegistry()]);
    dashboardRoutes(root);
  });

  void app.register(
    async (plugin) => {
      const v1 = plugin.withTypeProvider<ZodTypeProvider>();
      // Every route under the token declares who may call it (server/auth.ts
      // access()); one that does not is refused here, at registration.
      v1.addHook('onRoute', checkRouteAccess);
      // onRequest: before the body is read, so a refused caller learns nothing from validation.
      v1.addHook('onRequest', async (request, reply) => {
        await authenticate(request, reply, request.routeOptions.config.access);
      });
      holdRoutes(v1, ctx);
      intentRoutes(v1, ctx);
      appWebhookRoutes(v1, ctx);
      deliveryRoutes(v1, ctx);
      accountRoutes(v1, ctx);
      statusRoutes(v1, ctx);
      sendRateRoutes(v1, ctx);
      historyRoutes(v1, ctx);
      retentionRoutes(v1, ctx);
      suppressionRoutes(v1, ctx);
      tenantRoutes(v1, ctx);
      auditRoutes(v1, ctx);
    },
    { prefix: '/v1' },
  );
  // Open, like /healthz: the contract is not a secret (server/openapi.ts).
  void app.register(async (plugin) => openApiRoutes(plugin.withTypeProvider<ZodTypeProvider>()), { prefix: '/v1' });
  // Outside the bearer-token scope: each provider proves itself its own way.
  void app.register(webhookRoutes(ctx, options.webhooks ?? {}, options.accountWebhooks), { prefix: '/v1/webhooks' });
  return app;
}

export interface ApiServer {
  /** Base URL, e.g. http://127.0.0.1:8787 */
  url: string;
  app: FastifyInstance;
  /** Stop accepting, finish in-flight requests, close. Idempotent. */
  close(): Promise<void>;
}

/**
 * Build the API and listen on `port` (0 picks a free one) at `host` (default
 * 127.0.0.1: loopback only). The caller owns the pool.
 */
export async function startApiServer(options: ApiOptions & { port: number; host?: string; drainMs?: number }): Promise<ApiServer> {
  const app = buildApp(options);
  await app.listen({ port: options.port, host: options.host ?? '127.0.0.1' });
  // The address actually bound, not the one asked for: "0.0.0.0" says the API
  // is open on every interface, which is what an operator must see.
  const { address, family, port } = app.server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`,
    app,
    close: () => (closed ??= drainThenClose(app, options.drainMs ?? API_DRAIN_MS, options.logger)),
  };
}

/** How long a close waits for requests in flight before it cuts their connections. */
export const API_DRAIN_MS = 10_000;

/**
 * Close: no new connections, idle ones closed, requests in flight finished
 * (each answered with `connection: close`). A request still running after
 * `drainMs` (a client that stopped reading, a handler stuck on a lock) has
 * its connection cut, so a SIGTERM ends in bounded time; the cut is logged.
 */
async function drainThenClose(app: FastifyInstance, drainMs: number, logger: Logger): Promise<void> {
  const closing = app.close();
  const cut = setTimeout(() => {
    app.server.getConnections((_error, open) => {
      logger.warn({ event: 'api.close_forced', connections: open, drainMs }, 'requests still running after the drain; their connections are cut');
      app.server.closeAllConnections();
    });
  }, drainMs);
  try {
    await closing;
  } finally {
    clearTimeout(cut);
  }
}
