import type pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { databaseClock, type Clock } from '../runtime/clock.js';
import { LoopWorker, ServiceLoop, type TickResult } from '../runtime/loop.js';
import { webhookLimiterName, type WebhookEndpoint } from '../model/webhook-events.js';
import { rateLimiterEnsure, rateLimiterRefund, rateLimiterTakeEndpoint } from '../tables/rate-limiter.js';
import { webhookEndpointsActivate } from '../tables/webhook-endpoints.js';
import { webhookEventsLease, webhookEventsNextDueMs, webhookEventsRecord, type LeasedWebhook, type WebhookResult } from '../tables/webhook-events.js';
import { DEFAULT_RETRY_RULE, givenUp, retryDelayMs, type RetryRule } from './retry.js';
import { sendWebhook } from './send.js';

/**
 * The webhook lane: delivers the application events the triggers of
 * migration 0030 wrote, on a ServiceLoop of its own, apart from both email
 * lanes. Its loop never waits for a request: a tick takes each endpoint's
 * permits from its limiter row, leases at most that many due events (never
 * more than the endpoint's free in-flight slots) and starts their requests;
 * each request records its own result (fenced by its lease) when it ends
 * and wakes the loop. So one endpoint that is down or slow holds its own
 * `concurrency` slots for at most the timeout each, and delays neither the
 * other endpoints nor any email.
 *
 * At least once: an event whose record is lost (a crash, the database
 * away) is due again when its lease ends and is sent again under the same
 * webhook-id, which receivers deduplicate on.
 */

export interface WebhookWorkerOptions {
  pool: pg.Pool;
  schema: string;
  endpoints: readonly WebhookEndpoint[];
  /** One request's timeout (LEASEHOLD_WEBHOOK_TIMEOUT_MS); the lease is longer by a margin. */
  timeoutMs?: number;
  /** Give an event up this long after it became due (LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S). */
  giveUpAfterMs?: number;
  intervalMs?: number;
  retryRule?: RetryRule;
  /** In [0, 1): the back-off's jitter (tests fix it). */
  random?: () => number;
  clock?: Clock;
  logger?: Logger;
  metrics?: Metrics;
  fetch?: typeof fetch;
}

export class WebhookWorker extends LoopWorker {
  protected readonly loop: ServiceLoop;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly inFlight = new Map<string, number>();
  private readonly sends = new Set<Promise<void>>();
  private prepared = false;

  constructor(private readonly options: WebhookWorkerOptions) {
    super();
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? databaseClock;
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.webhookTimeoutMs;
    // Long enough that a request ends (and is recorded) well inside its lease.
    this.leaseMs = this.timeoutMs * 2 + 5_000;
    this.loop = new ServiceLoop({
      name: 'webhooks',
      intervalMs: options.intervalMs ?? DEFAULTS.webhookIntervalMs,
      logger: this.logger,
      tick: () => this.tick(),
      tickTimeoutMs: DEFAULTS.tickTimeoutMs,
    });
  }

  /** Requests in flight now, all endpoints. */
  get requestsInFlight(): number {
    return [...this.inFlight.values()].reduce((a, b) => a + b, 0);
  }

  /** Resolves once every request started so far has ended and been recorded. */
  async settled(): Promise<void> {
    while (this.sends.size > 0) await Promise.allSettled([...this.sends]);
  }

  /** Stops the loop, then waits for the requests in flight to end and be recorded. */
  override async stop(): Promise<void> {
    await super.stop();
    await Promise.allSettled([...this.sends]);
  }

  /**
   * Tell the triggers which endpoints exist and give each its limiter row;
   * done by the first tick (a database away at start is ridden out by the
   * loop's back-off, like any tick's failure).
   */
  async prepare(): Promise<void> {
    const { pool, schema, endpoints } = this.options;
    const others = await webhookEndpointsActivate(pool, schema, endpoints, this.clock.now());
    if (others.length > 0) warnUnserved(this.logger, others);
    for (const endpoint of endpoints) await rateLimiterEnsure(pool, schema, endpoint.rate, webhookLimiterName(endpoint.name));
    this.prepared = true;
  }

  /** One pass over the endpoints: start what is due and allowed. Returns the requests started. */
  async runOnce(): Promise<{ started: number; nextInMs?: number }> {
    if (!this.prepared) await this.prepare();
    const { pool, schema, endpoints } = this.options;
    const due = await webhookEventsNextDueMs(pool, schema, endpoints.map((e) => e.name), this.clock.now());
    let started = 0;
    let nextInMs: number | undefined;
    const soonest = (ms: number | undefined) => {
      if (ms !== undefined) nextInMs = Math.min(nextInMs ?? ms, ms);
    };
    let failure: unknown;
    for (const endpoint of endpoints) {
      const dueInMs = due.get(endpoint.name);
      if (dueInMs === undefined) continue;
      if (dueInMs > 0 || this.stopping) {
        soonest(dueInMs);
        continue;
      }
      const free = endpoint.concurrency - (this.inFlight.get(endpoint.name) ?? 0);
      // Full: a request that ends wakes the loop.
      if (free <= 0) continue;
      try {
        started += await this.startDue(endpoint, free, soonest);
      } catch (error) {
        // One endpoint's failure (its limiter, a lost connection) does not keep the others waiting.
        failure ??= error;
      }
    }
    // The loop's back-off and log, once every endpoint had its turn.
    if (failure !== undefined) throw failure;
    return { started, ...(nextInMs !== undefined ? { nextInMs } : {}) };
  }

  /** Take permits for up to `free` requests of `endpoint`, lease that many due events and start them; their unused permits go back after. */
  private async startDue(endpoint: WebhookEndpoint, free: number, soonest: (ms: number | undefined) => void): Promise<number> {
    const { pool, schema } = this.options;
    const limiter = webhookLimiterName(endpoint.name);
    const permits = await rateLimiterTakeEndpoint(pool, schema, limiter, free, this.clock.now());
    if (permits.granted === 0) {
      soonest(permits.retryInMs);
      return 0;
    }
    const lease = await webhookEventsLease(pool, schema, { endpoint: endpoint.name, limit: permits.granted, leaseMs: this.leaseMs, now: this.clock.now() });
    // Started before the refund: a refund lost with its connection must not leave leased events unsent.
    for (const event of lease.events) this.launch(endpoint, event, lease.now);
    // More may be due than the permits allowed: look again when the bucket has one.
    if (lease.events.length === permits.granted) soonest(permits.retryInMs || 1);
    const unused = permits.granted - lease.events.length;
    if (unused > 0) await rateLimiterRefund(pool, schema, unused, permits.bucketTime, limiter);
    return lease.events.length;
  }

  private async tick(): Promise<TickResult> {
    const run = await this.runOnce();
    // A test clock does not move while the loop sleeps: the interval, woken by each request's end.
    if (this.clock !== databaseClock || run.nextInMs === undefined) return { full: false };
    return { full: false, nextInMs: Math.ceil(run.nextInMs) };
  }

  private launch(endpoint: WebhookEndpoint, event: LeasedWebhook, leasedAt: Date): void {
    this.inFlight.set(endpoint.name, (this.inFlight.get(endpoint.name) ?? 0) + 1);
    const send = this.deliver(endpoint, event, leasedAt)
      .catch((error: unknown) => {
        // The record is lost with its connection: the lease ends and the event is sent again, same webhook-id.
        this.logger.error({ event: 'webhook.record_failed', webhookId: event.id, endpoint: endpoint.name, err: error }, 'webhook result not recorded');
      })
      .finally(() => {
        this.inFlight.set(endpoint.name, (this.inFlight.get(endpoint.name) ?? 1) - 1);
        this.sends.delete(send);
        if (!this.stopping) this.loop.wake();
      });
    this.sends.add(send);
  }

  private async deliver(endpoint: WebhookEndpoint, event: LeasedWebhook, leasedAt: Date): Promise<void> {
    const localStart = Date.now();
    const result = await sendWebhook(endpoint, event, { timeoutMs: this.timeoutMs, ...(this.options.fetch ? { fetch: this.options.fetch } : {}) });
    // The injected clock's now, or the database's time of the lease moved on by how long the request took.
    const now = this.clock.now() ?? new Date(leasedAt.getTime() + (Date.now() - localStart));
    let record: WebhookResult;
    if (result.ok) {
      record = { id: event.id, leaseToken: event.leaseToken, outcome: 'delivered', status: result.status, error: null };
    } else {
      const delay = retryDelayMs(event.attempts, result.retryAfterMs, (this.options.random ?? Math.random)(), this.options.retryRule ?? DEFAULT_RETRY_RULE);
      const nextAt = new Date(now.getTime() + delay);
      const dead = givenUp(event.dueSince, nextAt, this.options.giveUpAfterMs ?? DEFAULTS.webhookGiveUpAfterS * 1000);
      record = { id: event.id, leaseToken: event.leaseToken, outcome: dead ? 'dead' : 'retry', status: result.status, error: result.error, ...(dead ? {} : { nextAt }) };
    }
    const recorded = await webhookEventsRecord(this.options.pool, this.options.schema, [record], this.clock.now());
    const fields = { webhookId: event.id, endpoint: endpoint.name, type: event.type, attempt: event.attempts, status: result.status, durationMs: result.durationMs };
    if (recorded.length === 0) {
      this.logger.warn({ event: 'webhook.lease_lost', ...fields }, 'webhook result not recorded: its lease had ended');
      return;
    }
    this.options.metrics?.appWebhooks.inc({ endpoint: endpoint.name, type: event.type, outcome: record.outcome });
    if (record.outcome === 'delivered') this.logger.info({ event: 'webhook.delivered', ...fields }, 'webhook delivered');
    else if (record.outcome === 'dead') this.logger.warn({ event: 'webhook.dead', ...fields, error: result.error }, 'webhook given up');
    else this.logger.info({ event: 'webhook.failed', ...fields, error: result.error, retryAt: record.nextAt }, 'webhook failed; will retry');
  }
}

/**
 * Endpoints active in the database that this process does not deliver: their
 * events are still written, and wait for a process configured with them.
 */
export function warnUnserved(logger: Logger, endpoints: readonly string[]): void {
  logger.warn(
    { event: 'webhook.endpoints_unserved', endpoints },
    'webhook endpoints are active in the database but not configured in this process: their events wait for a process that has them (`leasehold webhooks deactivate <name>` stops writing them)',
  );
}
