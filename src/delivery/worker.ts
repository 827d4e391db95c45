import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../db/pool.js';
import type { Clock } from '../runtime/clock.js';
import { databaseClock } from '../runtime/clock.js';
import { DEFAULTS, isExampleSender } from '../defaults.js';
import { ValidationError } from '../errors.js';
import { noFaults, type Faults } from '../runtime/faults.js';
import { LoopWorker, ServiceLoop, type TickResult } from '../runtime/loop.js';
import { Slots } from '../runtime/slots.js';
import { defaultLibraryLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EmailGateway } from '../providers/gateway.js';
import { rateLimiterEnsure } from '../tables/rate-limiter.js';
import { DEFAULT_ACCOUNT, type QuotaUnit } from '../model/accounts.js';
import { AccountLegs } from './legs.js';
import { membersOf } from './requests.js';
import { sendRequest, unsentResult } from './send.js';
import { RoundPlan, type PlanAccount, type PlanSetting } from './plan.js';
import type { AttemptOutcome } from '../model/intent-states.js';
import { roundsInFlight, roundSize, type RateLimitPolicy } from '../model/delivery-policy.js';
import type { RetryPolicy } from './retry-policy.js';
import { shippedTemplates, type Templates } from '../templates/templates.js';
import type { DeliveryEvents } from './events.js';
import type { DeadlineSweeper } from './deadlines.js';
import { sideLoopsOf } from './side-loops.js';
import { checkWorkerOptions } from './worker-options.js';
import { leaseInSpan } from './spans.js';
import type { SweptIntent } from '../tables/outbox.js';
import { RoundRecorder } from './recorder.js';

/** One provider account the lane sends through (model/accounts.ts), with its gateway. */
export interface DeliveryAccount {
  name: string;
  gateway: EmailGateway;
  /** Sender for templates that name none; default the worker's `from`. */
  from?: string;
  /** Limiter policy written only if the account's limiter row does not exist yet; default the worker's `initialRate`. */
  initialRate?: RateLimitPolicy;
  /** Most emails a UTC day through this account; once spent, its intents move on to the next account until the day turns. */
  dailyQuota?: number;
  /** Emails per provider request: default the gateway's `maxBatch` (1 where it has no batch API); 1 turns batching off. */
  batch?: number;
  /** What a limiter permit stands for: a provider request (default) or an email. */
  unit?: QuotaUnit;
}

type WorkerAccount = PlanAccount & DeliveryAccount;

export interface DeliveryWorkerOptions {
  pool: pg.Pool;
  schema?: string;
  /** The one provider, as an account named `default` (the single-provider setup); or give `accounts`. */
  gateway?: EmailGateway;
  /** The provider accounts, in failover order (the order an intent tries them in); see `failover`. */
  accounts?: DeliveryAccount[];
  /**
   * The accounts intents try, in order (default: every account, in the
   * order given). An account not named here sends only the email of tenants
   * routed to it (tenant_policies.account).
   */
  failover?: string[];
  /** An account cooling down (429) longer than this sends its intents on to the next (default DEFAULTS.failoverAfterS). */
  failoverAfterMs?: number;
  /** Sender for templates that name none. Default DEFAULTS.emailFrom, an example address: a warning is logged until you set one. */
  from?: string;
  /** Message templates (`loadTemplates()`); default: the ones shipped in the package. Check them at start-up. */
  templates?: Templates;
  /** Most intents leased by one round (one lease statement). */
  batchSize?: number;
  /**
   * Most sends in flight in this worker; the leases of all its rounds never
   * exceed it together. Above `batchSize`, rounds overlap: up to
   * ceil(concurrency / batchSize) of them (at most MAX_ROUNDS_IN_FLIGHT), so
   * one round's lease and rendering run while another's sends and record do.
   */
  concurrency?: number;
  leaseMs?: number;
  /** Provider call timeout; must be shorter than the lease. */
  sendTimeoutMs?: number;
  maxAttempts?: number;
  /** Longest sleep when there is nothing to send. */
  pollIntervalMs?: number;
  /** Limiter policy written only if the limiter row does not exist yet. */
  initialRate?: RateLimitPolicy;
  retryPolicy?: RetryPolicy;
  clock?: Clock;
  /** Default: warnings and errors to stderr (`defaultLibraryLogger`); `silentLogger` for none. */
  logger?: Logger;
  metrics?: Metrics;
  faults?: Faults;
  random?: () => number;
  /**
   * This worker's presence (db/presence.ts): while its lock is held, each
   * lease names the worker as its owner, and other workers reclaim those
   * leases within seconds of its death. Absent, or while the lock is not
   * held: leases name no owner and are reclaimed only when they expire.
   */
  presence?: { readonly owner: number | undefined; readonly session?: Queryable | undefined };
  /** How often this worker looks for leases whose owner is gone (default DEFAULTS.reclaimIntervalMs; 0: never). */
  reclaimIntervalMs?: number;
  /** How long an owner must have been gone before its leases are taken (default DEFAULTS.reclaimGraceMs). */
  reclaimGraceMs?: number;
}

export interface DeliveryRun {
  /** Emails the permits granted this round could carry (the permits themselves, where a permit is an email). */
  permits: number;
  leased: number;
  outcomes: Partial<Record<AttemptOutcome, number>>;
  /** Why nothing was leased, when nothing was ('stopping': stop() was called before the round began, e.g. while it waited for a send slot). */
  blocked?: 'paused' | 'cooling-down' | 'rate-limit' | 'idle' | 'stopping';
  retryInMs?: number;
}

/** An account's emails per request: its `batch`, within what its gateway can send in one. */
function batchSizeOf(account: DeliveryAccount): number {
  const max = account.gateway.sendBatch ? Math.max(1, account.gateway.maxBatch ?? 1) : 1;
  const batch = account.batch ?? max;
  if (!Number.isInteger(batch) || batch < 1) throw new ValidationError(`accounts.${account.name}.batch`, 'must be a whole number of at least 1');
  if (batch > max) {
    throw new ValidationError(
      `accounts.${account.name}.batch`,
      max === 1 ? `${account.gateway.name} has no batch API: use 1` : `${account.gateway.name} takes at most ${max} emails per request`,
    );
  }
  return batch;
}

/**
 * The delivery lane. One round: reserve send slots (`concurrency` in all,
 * shared by the rounds in flight), take permits from each provider
 * account's shared limiter for at most that many, then lease at most that
 * many intents routed to that account (delivery/legs.ts; so every leased
 * intent is sent at once and no lease waits on the limiter or a slot),
 * send them concurrently with a timeout shorter than the lease, and record
 * all results in one fenced statement. Permits and slots not used are given
 * back; a slot as soon as its send ends, so the next round can lease while
 * this one records.
 *
 * At-least-once: a crash after the provider accepted and before the result
 * is recorded leaves the lease to expire, and the next attempt sends the
 * same intent again (same idempotency key, same content, same intent
 * header). Providers that deduplicate on the key absorb it; for the others
 * the acceptance is flagged `possible_duplicate`.
 */
export class DeliveryWorker extends LoopWorker<DeliveryEvents> {
  protected readonly loop: ServiceLoop;
  private readonly extraLoops: ServiceLoop[];
  /** The deadline sweep and the reclaim (delivery/side-loops.ts). */
  private readonly housekeeping: readonly ServiceLoop[];
  private readonly deadlines: DeadlineSweeper;
  private readonly slots: Slots;
  private readonly schema: string;
  private readonly accounts: readonly WorkerAccount[];
  private readonly byName: ReadonlyMap<string, WorkerAccount>;
  private readonly failover: string[];
  private readonly templates: Templates;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly sendTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly faults: Faults;
  private readonly random: () => number;
  private limiterReady = false;
  private readonly legs: AccountLegs;
  private readonly recorder: RoundRecorder;
  private readonly planning: PlanSetting;
  private waitingSince: number | undefined;

  constructor(private readonly options: DeliveryWorkerOptions) {
    super();
    checkWorkerOptions(options);
    this.schema = options.schema ?? DEFAULTS.schema;
    const from = options.from ?? DEFAULTS.emailFrom;
    const accounts = options.accounts ?? (options.gateway ? [{ name: DEFAULT_ACCOUNT, gateway: options.gateway }] : []);
    if (accounts.length === 0) throw new ValidationError('accounts', 'give a gateway or at least one account');
    this.accounts = accounts.map((a) => ({ ...a, from: a.from ?? from, batch: batchSizeOf(a), unit: a.unit ?? 'requests' }));
    this.byName = new Map(this.accounts.map((a) => [a.name, a]));
    if (this.byName.size !== this.accounts.length) throw new ValidationError('accounts', 'account names must be unique');
    this.failover = options.failover ?? this.accounts.map((a) => a.name);
    const unknown = this.failover.find((n) => !this.byName.has(n));
    if (unknown !== undefined) throw new ValidationError('failover', `names ${JSON.stringify(unknown)}, which is not one of the accounts`);
    if (this.failover.length === 0) throw new ValidationError('failover', 'name at least one account');
    this.templates = options.templates ?? shippedTemplates();
    const concurrency = Math.max(1, options.concurrency ?? DEFAULTS.deliveryConcurrency);
    this.slots = new Slots(concurrency);
    const batch = options.batchSize ?? DEFAULTS.deliveryBatch;
    this.batchSize = roundSize(batch, concurrency);
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    this.sendTimeoutMs = options.sendTimeoutMs ?? DEFAULTS.sendTimeoutMs(this.leaseMs);
    if (this.sendTimeoutMs >= this.leaseMs) throw new ValidationError('sendTimeoutMs', 'must be shorter than leaseMs');
    this.maxAttempts = options.maxAttempts ?? DEFAULTS.maxAttempts;
    this.clock = options.clock ?? databaseClock;
    this.legs = new AccountLegs({
      pool: options.pool,
      schema: this.schema,
      accounts: this.accounts.map((a) => ({
        name: a.name,
        provider: a.gateway.name,
        ...(a.dailyQuota !== undefined ? { dailyQuota: a.dailyQuota } : {}),
        batch: a.batch,
        unit: a.unit,
        keyed: a.gateway.batchIdempotent === true,
        ...(a.gateway.batchKeyLifetimeMs !== undefined ? { keyLifetimeMs: a.gateway.batchKeyLifetimeMs } : {}),
      })),
      roundEmails: this.batchSize,
      failover: this.failover,
      failoverAfterMs: options.failoverAfterMs ?? DEFAULTS.failoverAfterS * 1000,
      leaseMs: this.leaseMs,
      clock: this.clock,
    });
    this.logger = options.logger ?? defaultLibraryLogger();
    for (const account of this.accounts) {
      if (isExampleSender(account.from)) {
        this.logger.warn(
          { event: 'delivery.example_sender', account: account.name, from: account.from },
          'sending from an example address: set `from` (EMAIL_FROM, or the account\'s `from`)',
        );
      }
    }
    this.faults = options.faults ?? noFaults;
    this.random = options.random ?? Math.random;
    this.recorder = new RoundRecorder({
      pool: options.pool,
      schema: this.schema,
      maxAttempts: this.maxAttempts,
      clock: this.clock,
      logger: this.logger,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      providerOf: (account) => this.byName.get(account)?.gateway.name ?? account,
      // Recorded and committed: now in-process listeners may hear of it.
      emit: (events) => this.events.emitAll(events),
    });
    this.planning = {
      pool: options.pool,
      schema: this.schema,
      templates: this.templates,
      ...(options.clock ? { clock: options.clock } : {}),
      accounts: this.accounts,
      ...(options.metrics ? { metrics: options.metrics } : {}),
    };
    const [first, ...more] = Array.from(
      { length: roundsInFlight(batch, concurrency) },
      () =>
        new ServiceLoop({
          name: 'delivery',
          intervalMs: options.pollIntervalMs ?? DEFAULTS.deliveryPollMs,
          logger: this.logger,
          tick: () => this.tick(),
          tickTimeoutMs: DEFAULTS.tickTimeoutMs,
        }),
    );
    this.loop = first!;
    this.extraLoops = more;
    const side = sideLoopsOf(options, this.schema, this.logger, () => this.wake());
    this.deadlines = side.deadlines;
    this.housekeeping = side.loops;
  }

  protected override get loops(): readonly ServiceLoop[] {
    return [this.loop, ...this.extraLoops];
  }

  protected override get sideLoops(): readonly ServiceLoop[] {
    return this.housekeeping;
  }

  /** End the intents whose deadline passed unsent, now (the worker does it every DEFAULTS.deadlineSweepIntervalMs). */
  sweepDeadlines(): Promise<SweptIntent[]> {
    return this.deadlines.sweep();
  }

  /** One round, in the slots free now (waiting until one is). */
  async runOnce(): Promise<DeliveryRun> {
    let held = await this.slots.reserve(this.batchSize);
    const release = (n: number) => {
      const k = Math.min(n, held);
      held -= k;
      this.slots.release(k);
    };
    try {
      // Once stop() is called, a round that has not begun (one that waited
      // here for another round's sends to end) takes nothing: stop() waits
      // for the sends in flight, not for new ones.
      if (this.stopping) return { permits: 0, leased: 0, outcomes: {}, blocked: 'stopping' };
      return await this.round(held, release);
    } finally {
      release(held);
    }
  }

  private async round(slots: number, release: (n: number) => void): Promise<DeliveryRun> {
    const { pool } = this.options;
    await this.ensureLimiters();
    const token = randomUUID();
    const lease = await leaseInSpan(this.schema, slots, () => this.legs.lease(slots, token, this.options.presence?.owner));
    // A slot is a provider request in flight: the lease needs at most `requests`.
    release(slots - lease.requests);
    if (lease.permits === 0) {
      this.waitingSince ??= Date.now();
      return { permits: 0, leased: 0, outcomes: {}, blocked: lease.blocked ?? 'rate-limit', retryInMs: lease.retryInMs };
    }
    this.observeLimiterWait();
    const { leased } = lease;
    const permits = lease.capacity;

    for (const { intent, account } of leased) {
      if (intent.leaseWasExpired) {
        this.options.metrics?.leaseExpirations.inc();
        this.logger.warn({ event: 'lease.expired', intentId: intent.id, holdId: intent.holdId }, 'previous lease expired');
      }
      this.logger.info(
        { event: 'intent.leased', intentId: intent.id, holdId: intent.holdId, attempt: intent.attempts, account, batchId: intent.batchId ?? undefined },
        'intent leased',
      );
    }
    if (leased.length > 0) await this.faults.at('delivery.leased', { intents: leased.map((l) => l.intent.id) });

    // Suppressed recipients are rejected without calling the provider;
    // messages are rendered (once, at the first lease) and the rest planned
    // into requests per account, whose permits are then settled (plan.ts).
    const plan = new RoundPlan(this.planning, token);
    const { results, planned, messages } = await plan.prepare(leased, lease.requestPermits);
    const paid = await plan.settleRequestPermits(planned, lease.requestPermits);
    release(lease.requests - planned.length);
    // stop() was called while this round leased and prepared: what has not
    // been sent is given back at once, due again, instead of waiting out the lease.
    const sending = this.stopping ? [] : paid;
    for (const { request, account } of planned) {
      if (sending.some((p) => p.request === request)) continue;
      const why = this.stopping ? 'given back unsent: the worker is stopping' : 'given back unsent: no permit left for this request';
      // An open batch given back stays bound: it still goes again only whole.
      const bound = request.kind === 'batch' && request.batchId !== undefined ? { batchId: request.batchId, keepBatch: true } : {};
      for (const intent of membersOf(request)) results.push({ ...unsentResult(intent, token, why, account.name), ...bound });
    }
    release(planned.length - sending.length);
    const setting = {
      pool,
      schema: this.schema,
      token,
      sendTimeoutMs: this.sendTimeoutMs,
      failover: this.failover,
      retryPolicy: this.options.retryPolicy,
      random: this.random,
      faults: this.faults,
    };
    for (const { request, account } of sending) this.options.metrics?.emailsPerRequest.observe({ account: account.name }, membersOf(request).length);
    const sent = await Promise.all(
      sending.map(({ request, account }) => sendRequest(request, account, messages, setting).finally(() => release(1))),
    );
    results.push(...sent.flat());
    if (results.length === 0) return { permits, leased: 0, outcomes: {}, blocked: 'idle' };
    const holdIds = new Map(leased.map((l) => [l.intent.id, l.intent.holdId]));
    const traces = new Map(leased.map((l) => [l.intent.id, l.intent.holdTraceparent ?? null]));
    await this.recorder.record(results, holdIds, traces);
    await plan.suppressInactive(results, leased);
    // Intents this round moved to another account are due there now.
    for (const r of results) if (r.moveTo) this.legs.wake(r.moveTo);

    const outcomes: DeliveryRun['outcomes'] = {};
    for (const r of results) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    return { permits, leased: leased.length, outcomes };
  }

  /** Every account's limiter row, written with its initial policy once per worker (an existing row, with its runtime changes, wins). */
  private async ensureLimiters(): Promise<void> {
    if (this.limiterReady) return;
    for (const account of this.accounts) {
      const initial = account.initialRate ?? this.options.initialRate ?? { perSecond: DEFAULTS.ratePerSecond, burst: DEFAULTS.rateBurst };
      await rateLimiterEnsure(this.options.pool, this.schema, initial, account.name);
    }
    this.limiterReady = true;
  }

  /** How long this worker waited for permits (0 when it did not). */
  private observeLimiterWait(): void {
    this.options.metrics?.limiterWaitSeconds.observe(this.waitingSince === undefined ? 0 : (Date.now() - this.waitingSince) / 1000);
    this.waitingSince = undefined;
  }

  private async tick(): Promise<TickResult> {
    await this.recorder.recordKept();
    const run = await this.runOnce();
    if (run.leased > 0 && run.leased === run.permits) {
      // Everything this round could take was due: there may be a backlog.
      // Run again at once, and bring one more round loop in to help.
      this.wakeSleeping();
      return { full: true };
    }
    // Fewer due than it could take: nothing more is waiting now. New intents
    // wake the lane (NOTIFY); retries falling due are found by the poll.
    if (run.leased > 0 || run.blocked === 'idle') return { full: false };
    // Paused, cooling down or out of permits: ask again when it could succeed,
    // and at least once a second so policy changes and resumes are seen.
    return { full: false, nextInMs: Math.min(1000, run.retryInMs ?? 1000) };
  }
}
