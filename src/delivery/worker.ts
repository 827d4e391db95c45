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
import type { LeasedIntent, SweptIntent } from '../tables/outbox.js';
import type { AttemptOutcome } from '../model/intent-states.js';
import { roundsInFlight, roundSize, type RateLimitPolicy } from '../model/delivery-policy.js';
import { shippedTemplates, type Templates } from '../templates/templates.js';
import { resolveAccounts, type AccountSet, type DeliveryAccount } from './accounts.js';
import { RoundBudget } from './budget.js';
import { AccountLegs, type RoundLease } from './legs.js';
import { prepareRound, type PrepareSetting } from './prepare.js';
import { sendPrepared, type SendSetting } from './send.js';
import { RoundRecorder } from './recorder.js';
import type { RetryPolicy } from './retry-policy.js';
import type { DeliveryEvents } from './events.js';
import type { DeadlineSweeper } from './deadlines.js';
import { sideLoopsOf } from './side-loops.js';
import { checkWorkerOptions } from './worker-options.js';
import { leaseInSpan } from './spans.js';
import { HAND_OFF_MAX, handOffAccount, HandOffs, type HandOffTarget, type HandOffTicket } from './hand-off.js';

export type { DeliveryAccount } from './accounts.js';

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
  /** Some account's lease took all the round's permits allowed it (legs.ts RoundLease.saturated): more may be due now. */
  saturated?: boolean;
  outcomes: Partial<Record<AttemptOutcome, number>>;
  /** Why nothing was leased, when nothing was ('stopping': stop() was called before the round began, e.g. while it waited for a send slot). */
  blocked?: 'paused' | 'cooling-down' | 'rate-limit' | 'idle' | 'stopping';
  retryInMs?: number;
}

/**
 * The delivery lane. One round (round()), within one RoundBudget of send
 * slots (`concurrency` in all, shared by the rounds in flight) and limiter
 * permits (delivery/budget.ts):
 * 1. lease: per account, permits for at most the free slots, then at most
 *    that many intents routed to it, planned into requests once
 *    (delivery/legs.ts; so every leased intent is sent at once and no lease
 *    waits on the limiter or a slot);
 * 2. prepare: suppressed recipients and unrenderable messages leave the
 *    plan, every other message is rendered or read back (delivery/prepare.ts);
 * 3. send (delivery/send.ts sendPrepared): permits settled per request,
 *    the requests sent concurrently with a timeout shorter than the lease,
 *    each slot back as its send ends, so the next round can lease while
 *    this one records;
 * 4. record: all results in one fenced statement (delivery/recorder.ts).
 * Each account is resolved once, at construction (delivery/accounts.ts).
 *
 * A round can also begin at step 2: the expiry lane of this process hands
 * a batch's intents over already leased, in its own statement
 * (handOff(), delivery/hand-off.ts).
 *
 * At-least-once: a crash after the provider accepted and before the result
 * is recorded leaves the lease to expire, and the next attempt sends the
 * same intent again (same idempotency key, same content, same intent
 * header). Providers that deduplicate on the key absorb it; for the others
 * the acceptance is flagged `possible_duplicate`.
 */
export class DeliveryWorker extends LoopWorker<DeliveryEvents> implements HandOffTarget {
  protected readonly loop: ServiceLoop;
  private readonly extraLoops: ServiceLoop[];
  /** The deadline sweep and the reclaim (delivery/side-loops.ts). */
  private readonly housekeeping: readonly ServiceLoop[];
  private readonly deadlines: DeadlineSweeper;
  private readonly slots: Slots;
  private readonly schema: string;
  private readonly accounts: AccountSet;
  /** Emails one round leases at most (one lease statement per account). */
  private readonly batchSize: number;
  private readonly logger: Logger;
  private readonly faults: Faults;
  private limiterReady = false;
  private readonly legs: AccountLegs;
  private readonly preparing: PrepareSetting;
  /** What every send of this worker shares; a round adds its lease token. */
  private readonly sending: Omit<SendSetting, 'token' | 'signal'>;
  private readonly recorder: RoundRecorder;
  private waitingSince: number | undefined;
  /** The expiry lane's hand-offs to this worker (undefined: it takes none, delivery/hand-off.ts handOffAccount). */
  private readonly handOffs: HandOffs | undefined;

  constructor(private readonly options: DeliveryWorkerOptions) {
    super();
    checkWorkerOptions(options);
    this.schema = options.schema ?? DEFAULTS.schema;
    this.accounts = resolveAccounts({ ...options, from: options.from ?? DEFAULTS.emailFrom });
    const concurrency = Math.max(1, options.concurrency ?? DEFAULTS.deliveryConcurrency);
    this.slots = new Slots(concurrency);
    const batch = options.batchSize ?? DEFAULTS.deliveryBatch;
    this.batchSize = roundSize(batch, concurrency);
    const leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    const sendTimeoutMs = options.sendTimeoutMs ?? DEFAULTS.sendTimeoutMs(leaseMs);
    if (sendTimeoutMs >= leaseMs) throw new ValidationError('sendTimeoutMs', 'must be shorter than leaseMs');
    const clock = options.clock ?? databaseClock;
    this.logger = options.logger ?? defaultLibraryLogger();
    for (const account of this.accounts.all) {
      if (isExampleSender(account.from)) {
        this.logger.warn(
          { event: 'delivery.example_sender', account: account.name, from: account.from },
          'sending from an example address: set `from` (EMAIL_FROM, or the account\'s `from`)',
        );
      }
    }
    this.faults = options.faults ?? noFaults;
    const handing = handOffAccount(this.accounts);
    this.handOffs = handing
      ? new HandOffs({
          account: handing,
          leaseMs,
          schema: this.schema,
          logger: this.logger,
          owner: () => this.options.presence?.owner,
          deliver: (lease, budget, token) => this.deliver(lease, budget, token),
        })
      : undefined;
    const { pool } = options;
    const metrics = options.metrics ? { metrics: options.metrics } : {};
    this.legs = new AccountLegs({
      pool,
      schema: this.schema,
      accounts: this.accounts,
      failoverAfterMs: options.failoverAfterMs ?? DEFAULTS.failoverAfterS * 1000,
      leaseMs,
      clock,
    });
    this.preparing = {
      pool,
      schema: this.schema,
      templates: options.templates ?? shippedTemplates(),
      ...(options.clock ? { clock: options.clock } : {}),
      ...metrics,
    };
    this.sending = {
      pool,
      schema: this.schema,
      sendTimeoutMs,
      failover: this.accounts.failover,
      retryPolicy: options.retryPolicy,
      random: options.random ?? Math.random,
      faults: this.faults,
    };
    this.recorder = new RoundRecorder({
      pool,
      schema: this.schema,
      maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
      clock,
      logger: this.logger,
      ...metrics,
      providerOf: (account) => this.accounts.byName.get(account)?.provider ?? account,
      // Recorded and committed: now in-process listeners may hear of it.
      emit: (events) => {
        if (this.events.listenerCount('sent') + this.events.listenerCount('rejected') + this.events.listenerCount('dead') > 0) this.events.emitAll(events());
      },
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
    const budget = await RoundBudget.reserve(this.slots, this.batchSize, { pool: this.options.pool, schema: this.schema, roundEmails: this.batchSize });
    try {
      // Once stop() is called, a round that has not begun (one that waited
      // here for another round's sends to end) takes nothing: stop() waits
      // for the sends in flight, not for new ones.
      if (this.stopping) return { permits: 0, leased: 0, outcomes: {}, blocked: 'stopping' };
      return await this.round(budget);
    } finally {
      await budget.release();
    }
  }

  /** Resolves once the rounds in flight, hand-offs included, have ended (their sends recorded). */
  override async stop(): Promise<void> {
    await super.stop();
    await this.handOffs?.ended();
  }

  /**
   * The expiry lane's question (delivery/hand-off.ts): may the batch it is
   * about to expire be leased to this worker in the expiry statement? Yes,
   * with a ticket, while the worker runs, takes hand-offs (one account) and
   * has a send slot free now; the slots are reserved until the ticket is
   * delivered. Whether older email goes first is the statement's to say
   * (no older email due and unleased), not the round loops': a loop awake
   * (woken by a batch that was not handed, or by its poll) may have leased
   * everything due already, and asking only while one slept kept a lane
   * that fell off the hand-off once on the lease for seconds.
   */
  handOff(): HandOffTicket | undefined {
    if (!this.handOffs || this.stopping || !this.loop.isRunning) return undefined;
    const budget = RoundBudget.tryReserve(this.slots, Math.min(this.batchSize, HAND_OFF_MAX), { pool: this.options.pool, schema: this.schema, roundEmails: this.batchSize });
    return budget && this.handOffs.ticket(budget);
  }

  /** lease -> prepare -> send -> record, within the round's budget of slots and permits. */
  private async round(budget: RoundBudget): Promise<DeliveryRun> {
    await this.ensureLimiters();
    const token = randomUUID();
    const lease = await leaseInSpan(this.schema, budget.freeSlots, () => this.legs.lease(budget, token, this.options.presence?.owner));
    // A slot is a provider request in flight: the round needs one per request planned.
    budget.keepSlots(lease.legs.reduce((n, leg) => n + leg.requests.length, 0));
    if (lease.permits === 0) {
      this.waitingSince ??= Date.now();
      return { permits: 0, leased: 0, outcomes: {}, blocked: lease.blocked ?? 'rate-limit', retryInMs: lease.retryInMs };
    }
    this.observeLimiterWait();
    return this.deliver(lease, budget, token);
  }

  /** prepare -> send -> record: the round after its lease (or after a hand-off's). */
  private async deliver(lease: RoundLease, budget: RoundBudget, token: string): Promise<DeliveryRun> {
    const intents = this.leased(lease);
    if (intents.size > 0) await this.faults.at('delivery.leased', { intents: [...intents.keys()] });

    const prepared = await prepareRound(this.preparing, lease, token);
    const sent = await sendPrepared(prepared, budget, { ...this.sending, token, stopping: () => this.stopping, ...(this.options.metrics ? { metrics: this.options.metrics } : {}) });
    const results = [...prepared.results, ...sent.results];
    if (results.length === 0 && sent.error === undefined) return { permits: lease.capacity, leased: 0, saturated: lease.saturated, outcomes: {}, blocked: 'idle' };

    if (results.length > 0) await this.recorder.record(results, intents);
    // The intents of a request that threw stay leased, their outcome
    // unknown: the lease's expiry sends them again, flagged as such.
    if (sent.error !== undefined) throw sent.error;
    const outcomes: DeliveryRun['outcomes'] = {};
    for (const r of results) {
      outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
      // Intents this round moved to another account are due there now.
      if (r.moveTo) this.legs.wake(r.moveTo);
    }
    // Requests given back for want of a slot or a permit are due again now, as is anything a saturated lease left.
    return { permits: lease.capacity, leased: intents.size, saturated: lease.saturated || sent.givenBack > 0, outcomes };
  }

  /** The round's leased intents by id; an expired lease taken over is a warning, each lease a debug event. */
  private leased(lease: RoundLease): Map<string, LeasedIntent> {
    const intents = new Map<string, LeasedIntent>();
    const debug = this.logger.isLevelEnabled?.('debug') ?? true;
    for (const { account, intents: mine } of lease.legs) {
      for (const intent of mine) {
        intents.set(intent.id, intent);
        if (intent.leaseWasExpired) {
          this.options.metrics?.leaseExpirations.inc();
          this.logger.warn({ event: 'lease.expired', intentId: intent.id, holdId: intent.holdId }, 'previous lease expired');
        }
        if (debug) {
          this.logger.debug(
            { event: 'intent.leased', intentId: intent.id, holdId: intent.holdId, attempt: intent.attempts, account: account.name, batchId: intent.batchId ?? undefined },
            'intent leased',
          );
        }
      }
    }
    return intents;
  }

  /** Every account's limiter row, written with its initial policy once per worker (an existing row, with its runtime changes, wins). */
  private async ensureLimiters(): Promise<void> {
    if (this.limiterReady) return;
    for (const account of this.accounts.all) await rateLimiterEnsure(this.options.pool, this.schema, account.initialRate, account.name);
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
    if (run.saturated) {
      // Everything this round could take was due (as many intents as its
      // permits carried, or as many open batches as they paid for): there
      // may be a backlog. Run again at once, and bring one more round loop
      // in to help.
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
