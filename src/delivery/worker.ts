import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../db/pool.js';
import type { Clock } from '../runtime/clock.js';
import { databaseClock } from '../runtime/clock.js';
import { DEFAULTS, isExampleSender } from '../config.js';
import { ValidationError } from '../errors.js';
import { noFaults, type Faults } from '../runtime/faults.js';
import { LoopWorker, ServiceLoop, type TickResult } from '../runtime/loop.js';
import { Slots } from '../runtime/slots.js';
import { defaultLibraryLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EmailGateway, SendResult } from '../providers/gateway.js';
import { rateLimiterEnsure, rateLimiterRefund, rateLimiterTake } from '../tables/rate-limiter.js';
import { DEFAULT_ACCOUNT, type QuotaUnit } from '../model/accounts.js';
import { AccountLegs, type LeasedOnAccount, type RequestPermits } from './legs.js';
import type { AttemptResult } from '../tables/outbox.js';
import { membersOf, planRequests, type RequestShape, type SendRequest } from './requests.js';
import { sendRequest, unsentResult } from './send.js';
import { suppressionsAdd } from '../tables/suppressions.js';
import { suppressedAttempt, suppressedIntents } from './suppression-gate.js';
import type { Suppression } from '../model/suppression-reasons.js';
import type { AttemptOutcome } from '../model/intent-states.js';
import { roundsInFlight, roundSize, type RateLimitPolicy } from '../model/delivery-policy.js';
import type { RetryPolicy } from './retry-policy.js';
import { prepareMessages, templateFailure, type PreparedMessage } from './messages.js';
import { shippedTemplates, type Templates } from '../templates/templates.js';
import type { DeliveryEvents } from './events.js';
import { LeaseReclaimer } from './reclaimer.js';
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

type WorkerAccount = Required<Pick<DeliveryAccount, 'name' | 'gateway' | 'from' | 'batch' | 'unit'>> & DeliveryAccount;

/** One request a round sends, with its account. */
interface Planned {
  request: SendRequest;
  account: WorkerAccount;
}

export interface DeliveryWorkerOptions {
  pool: pg.Pool;
  schema?: string;
  /** The one provider, as an account named `default` (the single-provider setup); or give `accounts`. */
  gateway?: EmailGateway;
  /** The provider accounts, in failover order (the order an intent tries them in). */
  accounts?: DeliveryAccount[];
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
  /** Permits granted by the shared limiter this round. */
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
  private readonly reclaimLoop: ServiceLoop | undefined;
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
  private waitingSince: number | undefined;

  constructor(private readonly options: DeliveryWorkerOptions) {
    super();
    this.schema = options.schema ?? DEFAULTS.schema;
    const from = options.from ?? DEFAULTS.emailFrom;
    const accounts = options.accounts ?? (options.gateway ? [{ name: DEFAULT_ACCOUNT, gateway: options.gateway }] : []);
    if (accounts.length === 0) throw new ValidationError('accounts', 'give a gateway or at least one account');
    this.accounts = accounts.map((a) => ({ ...a, from: a.from ?? from, batch: batchSizeOf(a), unit: a.unit ?? 'requests' }));
    this.byName = new Map(this.accounts.map((a) => [a.name, a]));
    if (this.byName.size !== this.accounts.length) throw new ValidationError('accounts', 'account names must be unique');
    this.failover = this.accounts.map((a) => a.name);
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
    const reclaimIntervalMs = options.reclaimIntervalMs ?? DEFAULTS.reclaimIntervalMs;
    if (reclaimIntervalMs > 0) {
      const reclaimer = new LeaseReclaimer({
        pool: options.pool,
        // The presence session, while held: the reclaim never waits for a pooled connection behind the rounds.
        session: () => options.presence?.session,
        schema: this.schema,
        graceMs: options.reclaimGraceMs ?? DEFAULTS.reclaimGraceMs,
        logger: this.logger,
        ...(options.metrics ? { metrics: options.metrics } : {}),
        // The reclaimed intents are due now: a round picks them up at once.
        onReclaimed: () => this.wake(),
      });
      this.reclaimLoop = new ServiceLoop({
        name: 'delivery.reclaim',
        intervalMs: reclaimIntervalMs,
        // A reclaim is what ends a dead worker's wait: never back off long.
        maxBackoffMs: 1000,
        logger: this.logger,
        tick: () => reclaimer.tick(),
        tickTimeoutMs: DEFAULTS.tickTimeoutMs,
      });
    }
  }

  protected override get loops(): readonly ServiceLoop[] {
    return [this.loop, ...this.extraLoops];
  }

  protected override get sideLoops(): readonly ServiceLoop[] {
    return this.reclaimLoop ? [this.reclaimLoop] : [];
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
    const lease = await this.legs.lease(slots, token, this.options.presence?.owner);
    // A slot is a provider request in flight: the lease needs at most `requests`.
    release(slots - lease.requests);
    if (lease.permits === 0) {
      this.waitingSince ??= Date.now();
      return { permits: 0, leased: 0, outcomes: {}, blocked: lease.blocked ?? 'rate-limit', retryInMs: lease.retryInMs };
    }
    this.observeLimiterWait();
    const { leased } = lease;
    const permits = lease.capacity;
    const accountOf = new Map(leased.map((l) => [l.intent.id, this.byName.get(l.account)!]));

    // Suppressed recipients are rejected without calling the provider (the
    // lease looked them up); their permits go back too.
    const suppressed = await this.suppressed(leased, lease.requestPermits);

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

    // Rendered once, at the first lease, and stored: every attempt sends the
    // same bytes. Suppressed intents need no message: they are never sent.
    // Each account's sender fills in templates that name none. Then each
    // account's intents are planned into requests (requests.ts): batches
    // where its provider has them.
    const results: AttemptResult[] = [];
    const planned: Planned[] = [];
    const messages = new Map<string, PreparedMessage>();
    for (const account of this.accounts) {
      const mine = leased.filter((l) => l.account === account.name && !suppressed.has(l.intent.id)).map((l) => l.intent);
      if (mine.length === 0) continue;
      for (const [id, m] of await prepareMessages(pool, this.schema, this.templates, mine, { from: account.from })) messages.set(id, m);
      const sendable = mine.filter((intent) => {
        const prepared = messages.get(intent.id)!;
        if (!prepared.ok) results.push({ ...templateFailure(intent, token, prepared.error), account: account.name });
        return prepared.ok;
      });
      for (const request of planRequests(sendable, this.shapeOf(account))) planned.push({ request, account });
    }
    for (const l of leased) {
      const suppression = suppressed.get(l.intent.id);
      if (suppression) results.push({ ...suppressedAttempt(l.intent, token, suppression), account: l.account });
    }
    const paid = await this.settleRequestPermits(planned, lease.requestPermits);
    release(lease.requests - planned.length);
    // stop() was called while this round leased and prepared: what has not
    // been sent is given back at once, due again, instead of waiting out the lease.
    const sending = this.stopping ? [] : paid;
    for (const { request, account } of planned) {
      if (sending.some((p) => p.request === request)) continue;
      const why = this.stopping ? 'given back unsent: the worker is stopping' : 'given back unsent: no permit left for this request';
      for (const intent of membersOf(request)) results.push(unsentResult(intent, token, why, account.name));
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
    const sent = await Promise.all(
      sending.map(({ request, account }) => sendRequest(request, account, messages, setting).finally(() => release(1))),
    );
    results.push(...sent.flat());
    if (results.length === 0) return { permits, leased: 0, outcomes: {}, blocked: 'idle' };
    const holdIds = new Map(leased.map((l) => [l.intent.id, l.intent.holdId]));
    await this.recorder.record(results, holdIds);
    await this.suppressInactive(results, leased);
    // Intents this round moved to another account are due there now.
    for (const r of results) if (r.moveTo) this.legs.wake(r.moveTo);

    const outcomes: DeliveryRun['outcomes'] = {};
    for (const r of results) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    return { permits, leased: leased.length, outcomes };
  }

  /** Addresses a provider answered are inactive (Postmark 406) join the suppression list: no account sends to them again. */
  private async suppressInactive(results: AttemptResult[], leased: LeasedOnAccount[]): Promise<void> {
    const inactive = results.filter((r) => r.suppressRecipient);
    if (inactive.length === 0) return;
    const byId = new Map(leased.map((l) => [l.intent.id, l]));
    const entries = inactive.map((r) => ({
      address: byId.get(r.id)!.intent.recipient,
      reason: 'hard_bounce' as const,
      detail: r.error,
      provider: this.byName.get(r.account ?? DEFAULT_ACCOUNT)?.gateway.name ?? null,
    }));
    const added = await suppressionsAdd(this.options.pool, this.schema, entries);
    if (added.length > 0) this.options.metrics?.suppressionsAdded.inc({ reason: 'hard_bounce' }, added.length);
  }

  /** How an account's intents go in requests: its batch size, and whether its provider deduplicates a batch on its key. */
  private shapeOf(account: WorkerAccount): RequestShape {
    return { batch: account.batch, keyed: account.gateway.batchIdempotent === true };
  }

  /**
   * On a `requests` account sending batches a permit is a request, known
   * only now: give back the permits the planned requests do not need, or
   * take the few more that singles sent beside the batches need. A request
   * that gets no permit is not sent (its intents go back, due at once).
   */
  private async settleRequestPermits(planned: Planned[], takes: RequestPermits[]): Promise<Planned[]> {
    const unpaid = new Set<Planned>();
    for (const take of takes) {
      const mine = planned.filter((p) => p.account.name === take.account);
      const spare = take.granted - mine.length;
      const emailsUsed = mine.reduce((n, p) => n + membersOf(p.request).length, 0);
      const emailsSpare = take.granted * take.perPermit - emailsUsed;
      if (spare > 0 || emailsSpare > 0) {
        await rateLimiterRefund(this.options.pool, this.schema, Math.max(0, spare), take.bucketTime, take.account, Math.max(0, emailsSpare));
      }
      if (spare < 0) {
        const account = this.byName.get(take.account)!;
        const more = await rateLimiterTake(this.options.pool, this.schema, -spare, null, take.account, account.dailyQuota, take.perPermit);
        for (const p of mine.slice(mine.length - (-spare - more.granted))) unpaid.add(p);
      }
    }
    return planned.filter((p) => !unpaid.has(p));
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

  /** The leased intents whose recipient is suppressed, with their permits given back to their accounts. */
  private async suppressed(leased: LeasedOnAccount[], requestPermits: RequestPermits[]): Promise<Map<string, Suppression>> {
    const suppressed = await suppressedIntents(this.options.pool, this.schema, leased.map((l) => l.intent));
    if (suppressed.size === 0) return suppressed;
    const refunds = new Map<string, { n: number; bucketTime: string }>();
    // Where a permit is a request, the round gives back what its requests did not use (settleRequestPermits).
    const perRequest = new Set(requestPermits.map((t) => t.account));
    for (const l of leased) {
      if (!suppressed.has(l.intent.id) || perRequest.has(l.account)) continue;
      const r = refunds.get(l.account) ?? { n: 0, bucketTime: l.bucketTime };
      r.n += 1;
      refunds.set(l.account, r);
    }
    for (const [account, r] of refunds) await rateLimiterRefund(this.options.pool, this.schema, r.n, r.bucketTime, account);
    this.options.metrics?.suppressedSends.inc(suppressed.size);
    return suppressed;
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
