import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Config } from './config.js';
import { DEFAULTS } from './defaults.js';
import { Presence } from './db/presence.js';
import { waitForDatabase } from './db/wait.js';
import { deliveryWorkerFor, expiryWorkerFor, listenerFor, operationsFor, type ServiceBase } from './service-parts.js';
import { describeHosts, parseDatabaseUrl } from './model/database-url.js';
import type { DeliveryWorker } from './delivery/worker.js';
import { TemplatesBrokenError } from './errors.js';
import { ingestEvents } from './events/ingest.js';
import { accountWebhooks, webhookSettingsFromEnv, type AccountWebhook, type WebhookSettings } from './events/webhook-config.js';
import type { ExpiryWorker } from './holds/expiry-worker.js';
import { checkExpireHook } from './holds/expire-hook.js';
import { createMetrics, stalledAfterSeconds, type Metrics } from './observability/metrics.js';
import type { EmailGateway } from './providers/gateway.js';
import { accountsFromConfig, createGateways, type AccountGateway } from './providers/registry.js';
import type { Accounts } from './model/accounts.js';
import { SandboxGateway } from './providers/sandbox.js';
import { PruneWorker } from './retention/prune-worker.js';
import { LaneSampler } from './read/lane-sampler.js';
import { startApiServer, type ApiServer } from './server/app.js';
import { ApiTokens } from './server/auth.js';
import { rateLimiterEnsure } from './tables/rate-limiter.js';
import { applyConfiguredRates } from './ops/rate-configuration.js';
import { describeProblem } from './templates/source.js';
import type { Templates } from './templates/templates.js';
import { templatesFromConfig } from './templates/configured.js';
import { DEFAULT_WEBHOOK_ENDPOINT, webhookLimiterName, type WebhookEndpoint } from './model/webhook-events.js';
import { webhookEndpointsFromConfig } from './webhooks/endpoints.js';
import { startWebhookLane } from './webhooks/lane.js';
import type { WebhookWorker } from './webhooks/worker.js';

/**
 * The composition root: the one place that builds leasehold's parts from a
 * Config. `leasehold start`, the single-lane commands, `api`, `demo`, the
 * benchmarks and the test fixtures all build through here, so a lane is
 * wired the same way everywhere and the defaults live in one place (config.ts).
 *
 * Two steps, because some mistakes must stop a start before any connection
 * is opened: `prepareService` checks everything Config alone decides (the
 * provider's variables, the templates, the webhook secrets) and throws a
 * ConfigError, TemplatesBrokenError or MissingPackageError (the CLI exits 2); `startService`
 * then starts the chosen parts on an open database.
 */

export { deliveryWorkerFor, expiryWorkerFor, operationsFor, type ServiceBase } from './service-parts.js';

export interface ServiceParts {
  expiry?: boolean;
  delivery?: boolean;
  api?: boolean;
  /** The retention policy's prune worker (safe to run in every process). */
  retention?: boolean;
}

export interface PreparedService {
  config: Config;
  parts: ServiceParts;
  /** The provider accounts (LEASEHOLD_ACCOUNTS_FILE, or `default` from EMAIL_PROVIDER), checked. */
  accounts: Accounts;
  /** A gateway per account in failover order, for the delivery lane. */
  gateways: AccountGateway[] | undefined;
  templates: Templates | undefined;
  webhooks: WebhookSettings | undefined;
  /** Each account's webhook endpoint (an accounts file's accounts). */
  accountWebhooks: Map<string, AccountWebhook> | undefined;
  /** The application's webhook endpoints (LEASEHOLD_WEBHOOK_URL, LEASEHOLD_WEBHOOKS_FILE), checked; delivered by the delivery lane's process. */
  appWebhooks: WebhookEndpoint[];
  /** LEASEHOLD_API_TOKENS_FILE's tokens, read and checked (the API's part only). */
  tokenEntries: Awaited<ReturnType<typeof ApiTokens.readFile>> | undefined;
}

/** The templates this configuration sends with (the CLI builds them without loading this module). */
export { templatesFromConfig };

/** The configured templates, or TemplatesBrokenError naming the first problem: found before any message is. */
export function checkedTemplates(config: Config): Templates {
  const templates = templatesFromConfig(config);
  const problems = templates.check();
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    throw new TemplatesBrokenError(
      `templates in ${templates.source} are broken: ${describeProblem(problems[0]!)}${more}; run \`leasehold templates check\``,
    );
  }
  return templates;
}

/**
 * Check what Config alone decides for these parts: the accounts file (for
 * every part: the API lists accounts and takes their webhooks) and, for
 * the delivery lane, every account's settings. `gateway` replaces the
 * configured provider of the first account (demo, tests).
 */
export async function prepareService(config: Config, parts: ServiceParts, overrides: { gateway?: EmailGateway } = {}): Promise<PreparedService> {
  const accounts = accountsFromConfig(config);
  let gateways: AccountGateway[] | undefined;
  if (parts.delivery) {
    gateways = overrides.gateway
      ? [{ account: accounts.accounts.find((a) => a.name === accounts.failover[0])!, gateway: overrides.gateway }]
      : await createGateways(config, accounts);
  }
  return {
    config,
    parts,
    accounts,
    gateways,
    templates: parts.delivery ? checkedTemplates(config) : undefined,
    webhooks: parts.api ? webhookSettingsFromEnv(config.env) : undefined,
    accountWebhooks: parts.api && config.accountsFile ? accountWebhooks(accounts.accounts) : undefined,
    // Read for every part, so a broken endpoints file stops any start, in one line.
    appWebhooks: webhookEndpointsFromConfig(config),
    // A broken tokens file stops the start here, in one line naming the entry and the field.
    tokenEntries: parts.api && config.apiTokensFile ? await ApiTokens.readFile(config.apiTokensFile) : undefined,
  };
}

/** LEASEHOLD_API_TOKEN, or a fresh random one (the caller prints it once). */
export function resolveApiToken(configured: string | undefined): { token: string; generated: boolean } {
  if (configured) return { token: configured, generated: false };
  return { token: randomBytes(24).toString('base64url'), generated: true };
}

export interface RunningService {
  api?: ApiServer;
  expiry?: ExpiryWorker;
  delivery?: DeliveryWorker;
  prune?: PruneWorker;
  /** The application's webhooks, beside the delivery lane when endpoints are configured. */
  webhooks?: WebhookWorker;
  metrics: Metrics;
  /** Lines for the operator (address, generated token, lanes running), printed once signals are handled. */
  announcements: string[];
  /**
   * Read LEASEHOLD_API_TOKENS_FILE again (SIGHUP): the names now in force,
   * or a ConfigError naming the entry and field, the old tokens staying in
   * force. Undefined without an API.
   */
  reloadTokens?: () => Promise<string[]>;
  /**
   * Drain in order: the API stops accepting, the expiry worker finishes its
   * transaction, the delivery worker finishes its sends and records them.
   * The caller closes the database afterwards. Idempotent.
   */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The database URL, for the delivery lane's LISTEN connection (a session of its own) unless LEASEHOLD_LISTEN_URL names another. */
  databaseUrl: string;
  /** --host, overriding LEASEHOLD_HOST. */
  host?: string;
  /** How long start-up waits for a database that went away after it opened (db/wait.ts); default 0. */
  dbWaitS?: number;
  metrics?: Metrics;
}

/** Start the prepared parts on an open database. On failure, whatever started is stopped again. */
export async function startService(prepared: PreparedService, base: Omit<ServiceBase, 'metrics'>, options: StartOptions): Promise<RunningService> {
  const { config, parts } = prepared;
  const metrics = options.metrics ?? createMetrics();
  const full: ServiceBase = { ...base, metrics };
  /** This process's name on the intents channel (its expiry lane's NOTIFY payload), never a probe's. */
  const ownNotify = `process:${randomUUID()}`;
  const { logger } = base;
  const stops: Array<() => Promise<void>> = [];
  const service: RunningService = {
    metrics,
    announcements: [],
    stop: (() => {
      let stopped: Promise<void> | undefined;
      return () =>
        (stopped ??= (async () => {
          for (const stop of stops) await stop();
        })());
    })(),
  };
  try {
    // Each account's configured limit: a process that sends applies it when
    // it changed since it was last applied (ops/rate-configuration.ts); the
    // others (an API, an expiry lane) only write a missing row, so a process
    // that never sends cannot take the limit back to its defaults. These are
    // the first writes after the migrations: a restart or failover that lands
    // between the two is waited out as the migrations' was.
    const from = config.accountsFile ? 'LEASEHOLD_ACCOUNTS_FILE' : 'LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST';
    const rates = [
      ...prepared.accounts.accounts.map((account) => ({
        account: account.name,
        policy: { perSecond: account.rate.perSecond, burst: account.rate.burst },
        from,
      })),
      // Each webhook endpoint's limiter, by the same rule: a rate changed in
      // the endpoints file takes effect at the next start.
      ...(parts.delivery
        ? prepared.appWebhooks.map((endpoint) => ({
            account: webhookLimiterName(endpoint.name),
            policy: endpoint.rate,
            from: endpoint.name === DEFAULT_WEBHOOK_ENDPOINT && config.webhookUrl ? 'LEASEHOLD_WEBHOOK_URL' : 'LEASEHOLD_WEBHOOKS_FILE',
          }))
        : []),
    ];
    await waitForDatabase(
      async () => {
        if (parts.delivery) await applyConfiguredRates(base.pool, base.schema, rates, logger);
        else for (const rate of rates) await rateLimiterEnsure(base.pool, base.schema, rate.policy, rate.account, rate.from);
      },
      { waitS: options.dbWaitS ?? 0, logger, hosts: describeHosts(parseDatabaseUrl(options.databaseUrl)) },
    );
    // The hook runs in the expiry lane and in the API's confirm, cancel and
    // extend: a name that is not a function taking text[] stops the start
    // here (ConfigError naming LEASEHOLD_EXPIRE_HOOK: exit 2), after the
    // migrations, before any hold is touched.
    if (config.expireHook && (parts.expiry || parts.api)) await checkExpireHook(base.pool, config.expireHook);
    if (parts.api) {
      // A generated token only when no token at all is configured.
      const { token, generated } = config.apiTokensFile && !config.apiToken ? { token: undefined, generated: false } : resolveApiToken(config.apiToken);
      const tokens = new ApiTokens({ envToken: token, entries: prepared.tokenEntries ?? [], file: config.apiTokensFile });
      const api = await startApiServer({
        pool: base.pool,
        schema: base.schema,
        config,
        logger,
        metrics,
        tokens,
        port: config.port,
        host: options.host ?? config.host,
        accounts: prepared.accounts,
        ...(prepared.webhooks ? { webhooks: prepared.webhooks } : {}),
        ...(prepared.accountWebhooks ? { accountWebhooks: prepared.accountWebhooks } : {}),
      });
      service.api = api;
      service.reloadTokens = () => tokens.reload();
      stops.push(() => api.close());
      if (generated) service.announcements.push(`API token (generated for this run; set LEASEHOLD_API_TOKEN to keep one): ${token}`);
      service.announcements.push(`leasehold API listening on ${api.url}`, `dashboard: ${api.url}/`);
      logger.info({ event: 'api.started', url: api.url }, 'API listening');
      // The last hour the dashboard draws on open (GET /v1/status/history), kept by the process serving it.
      const sampler = new LaneSampler({ db: base.pool, schema: base.schema, failover: prepared.accounts.failover, logger });
      sampler.start();
      stops.unshift(() => sampler.stop());
    }
    const gateways = prepared.gateways;
    if (parts.delivery && gateways) {
      const presence = new Presence(base.schema, logger);
      const worker = deliveryWorkerFor(config, full, gateways, { presence, ...(prepared.templates ? { templates: prepared.templates } : {}) });
      service.delivery = worker;
      metrics.watchLane('delivery', { age: () => worker.lastRoundAgeSeconds(), stalledAfterSeconds: stalledAfterSeconds(worker.roundIntervalMs) });
      for (const { gateway } of gateways) {
        if (!(gateway instanceof SandboxGateway)) continue;
        // The sandbox reports delivered/bounced/complained into the same ingestion path as the webhooks.
        gateway.connectEvents((events) =>
          ingestEvents(base.pool, base.schema, events, { logger, metrics }).catch((error: unknown) =>
            logger.warn({ event: 'sandbox.events_failed', error: (error as Error)?.message }, 'sandbox events not stored'),
          ),
        );
      }
      const listener = config.listen ? listenerFor(config, base, options.databaseUrl, () => worker.wake(), presence, ownNotify) : undefined;
      if (!listener) logger.info({ event: 'listener.disabled', pollMs: DEFAULTS.deliveryPollMs }, 'LEASEHOLD_LISTEN=off: the delivery lane polls');
      listener?.start();
      worker.start();
      stops.push(async () => {
        await listener?.stop();
        await worker.stop();
        for (const { gateway } of gateways) await gateway.close?.();
      });
      const names = gateways.map(({ account, gateway }) => `${account.name}: ${gateway.name}`).join(', ');
      logger.info({ event: 'delivery_worker.started', accounts: gateways.map((g) => g.account.name), provider: gateways[0]!.gateway.name }, 'delivery worker started');
      service.announcements.push(`delivery lane running (${gateways.length === 1 ? `provider ${gateways[0]!.gateway.name}` : `accounts ${names}`})`);
      const webhooks = await startWebhookLane(prepared.appWebhooks, config, full);
      if (webhooks) {
        service.webhooks = webhooks;
        metrics.watchLane('webhooks', { age: () => webhooks.lastRoundAgeSeconds(), stalledAfterSeconds: stalledAfterSeconds(webhooks.roundIntervalMs) });
        stops.unshift(() => webhooks.stop());
        service.announcements.push(`webhooks to ${prepared.appWebhooks.map((e) => e.name).join(', ')}`);
      }
    }
    if (parts.expiry) {
      // The delivery lane beside it is handed each batch's email when it can
      // send it at once (delivery/hand-off.ts), and woken by the commit
      // itself for the rest, not by the NOTIFY coming back: the NOTIFY names
      // this process, and its listener leaves it to the other processes.
      const delivery = service.delivery;
      const worker = expiryWorkerFor(
        config,
        full,
        delivery ? { onIntentsCommitted: () => delivery.wake(), notifyPayload: ownNotify, ...(config.handOff ? { handOff: delivery } : {}) } : {},
      );
      service.expiry = worker;
      metrics.watchLane('expiry', { age: () => worker.lastRoundAgeSeconds(), stalledAfterSeconds: stalledAfterSeconds(worker.roundIntervalMs) });
      worker.start();
      stops.unshift(() => worker.stop());
      logger.info({ event: 'expiry_worker.started', intervalMs: config.expiryIntervalMs }, 'expiry worker started');
      service.announcements.push('expiry lane running');
    }
    if (parts.retention) {
      const worker = new PruneWorker({ pool: base.pool, schema: base.schema, policy: config.retention, logger, metrics });
      service.prune = worker;
      worker.start();
      stops.unshift(() => worker.stop());
      logger.info({ event: 'retention_worker.started', ...config.retention }, 'retention worker started');
    }
  } catch (error) {
    await service.stop().catch(() => {});
    throw error;
  }
  return service;
}

