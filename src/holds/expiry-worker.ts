import type pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import { intentsChannel, PROBE_PREFIX } from '../db/listener.js';
import { withTransaction, type Queryable } from '../db/pool.js';
import type { Clock } from '../runtime/clock.js';
import { databaseClock } from '../runtime/clock.js';
import { noFaults, type Faults } from '../runtime/faults.js';
import { LoopWorker, ServiceLoop, type TickResult } from '../runtime/loop.js';
import type { Logger } from '../observability/logger.js';
import { defaultLibraryLogger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { annotate, ATTR, capped, DB_SYSTEM, inSpan, linkHolds, MESSAGING_SYSTEM } from '../observability/tracing.js';
import { checkArgument, checkPool, rules } from '../db/arguments.js';
import { holdsDueOutlook, holdsExpireDue, holdsExpireDueWithOutlook, type DueOutlook, type ExpiredHold, type IntentsNotify } from '../tables/holds.js';
import { hookFailuresRecord, type HookFailure } from '../tables/hook-failures.js';
import { expireWithHook, type FailedHold, type HookSettings, type OnExpired } from './expire-hook.js';
import type { HandOffTarget } from '../delivery/hand-off.js';

export interface ExpiryWorkerOptions {
  pool: pg.Pool;
  schema?: string;
  /** Longest sleep between scans when nothing is due sooner (ms). */
  intervalMs?: number;
  /** Most holds locked and expired per transaction. */
  batchSize?: number;
  /** Each expiry email's deadline, seconds after the expiry: still unsent then, it ends missed_deadline (LEASEHOLD_NOTICE_DEADLINE_S; default none). */
  noticeDeadlineSeconds?: number | null;
  clock?: Clock;
  /** Default: warnings and errors to stderr (`defaultLibraryLogger`); `silentLogger` for none. */
  logger?: Logger;
  metrics?: Metrics;
  faults?: Faults;
  /**
   * The application's hook (holds/expire-hook.ts): called on the expiry transaction's
   * client with the holds it expired, after their intents are written and
   * before the commit; its changes commit with the expiry or neither does.
   * A hold whose call fails by itself stays held and is retried with
   * back-off (holds/expire-hook.ts); the rest of the batch expires on time.
   */
  onExpired?: OnExpired;
  /** The hook's bound, as a statement_timeout around its call (default 5000 ms); slower counts as failing. */
  hookTimeoutMs?: number;
  /**
   * Called at once when a batch that created intents has committed. The
   * composition root wakes the delivery lane of this process with it: the
   * batch's NOTIFY still wakes every other process, but the one beside it
   * need not wait for the notification to come back through the database
   * (under load, up to tens of milliseconds at the p99). Errors it throws
   * are logged, never the batch's.
   */
  onIntentsCommitted?: () => void;
  /**
   * The payload of the NOTIFY a batch with intents sends (default ''). The
   * composition root gives a name for this process, the same it gives the
   * delivery lane's listener (`ownPayload`): woken by onIntentsCommitted
   * already, that lane leaves its own process's NOTIFY unanswered instead of
   * running a second round that would lease nothing.
   */
  notifyPayload?: string;
  /**
   * The delivery worker of this process, offered each batch's intents
   * already leased (delivery/hand-off.ts): when it can send them at once,
   * the expiry statement leases them to it, and they go from the commit
   * straight to their send. Only batches run as their one statement (no
   * hook, no fault seams) are offered.
   */
  handOff?: HandOffTarget;
}

/** A hold that expired, told after the transaction that expired it committed. */
export interface HoldExpiredEvent {
  holdId: string;
  /** The intent created for its email (null for a hold expired without one). */
  intentId: string | null;
  expiresAt: Date;
  expiredAt: Date;
}

export interface ExpiryEvents {
  expired: HoldExpiredEvent;
}

/** One batch as runOnce gets it: the holds expired, the hook's failures (stored in the batch's transaction), the outlook when the statement read it, the intents handed off. */
interface ExpiryBatch {
  expired: ExpiredHold[];
  hookFailed: FailedHold[];
  hookStored: HookFailure[];
  outlook?: DueOutlook;
  /** Intents the statement leased to this process's delivery worker (none: 0). */
  handedOff?: number;
}

export interface ExpiryRun {
  expired: ExpiredHold[];
  full: boolean;
  /** Holds left held because their hook call failed (none without a hook). */
  hookFailed: FailedHold[];
  /** A short batch's outlook, when its statement read it (no fault seam, and no hook or one that succeeded for the whole batch); else the tick reads it after. */
  outlook?: DueOutlook;
}

/**
 * The expiry lane. Each tick is one transaction running one set-based
 * statement (lock due holds with SKIP LOCKED, expire them, insert their
 * intents). Full batches loop at once; otherwise the worker sleeps until the
 * next hold falls due, never longer than the interval, which is what keeps
 * lateness far below the interval. Any number may run, in any processes.
 */
export class ExpiryWorker extends LoopWorker<ExpiryEvents> {
  protected readonly loop: ServiceLoop;
  private readonly schema: string;
  /** Where and how a batch with intents announces them (its NOTIFY). */
  private readonly notify: IntentsNotify;
  private readonly batchSize: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly faults: Faults;
  private readonly intervalMs: number;
  /** Current back-off while due holds are left behind (0 when none are). */
  private dueRetryMs = 0;
  /** The last batch was full: a backlog, which the next batch (as full) would not be handed off in; its delivery worker is not asked. */
  private lastFull = false;
  private readonly hook: HookSettings | undefined;
  /** The expire span's constant attributes: one statement that expires holds and creates their intents (messages). */
  private readonly spanAttributes;

  constructor(private readonly options: ExpiryWorkerOptions) {
    super();
    checkArgument('options', rules().z.object({}, 'must be an object like { pool }'), options);
    checkPool(options.pool, 'options.pool');
    const r = rules();
    checkArgument(
      'options',
      r.z.object({
        schema: r.schema.optional(),
        intervalMs: r.positive.optional(),
        batchSize: r.positiveInt.optional(),
        noticeDeadlineSeconds: r.positive.nullable().optional(),
        clock: r.clock.optional(),
        logger: r.logger.optional(),
        onExpired: r.z.custom<OnExpired>((v) => typeof v === 'function', 'must be a function (tx, holds) => Promise<void>').optional(),
        hookTimeoutMs: r.positiveInt.optional(),
        onIntentsCommitted: r.z.custom<() => void>((v) => typeof v === 'function', 'must be a function () => void').optional(),
        // pg_notify takes at most 8,000 bytes of payload.
        handOff: r.z.custom<HandOffTarget>((v) => typeof (v as HandOffTarget | null)?.handOff === 'function', 'must have a handOff() method (a DeliveryWorker)').optional(),
        notifyPayload: r.z.string().max(200).refine((p) => !p.startsWith(PROBE_PREFIX), `must not start with ${PROBE_PREFIX} (the listeners' test notifications)`).optional(),
      }),
      options,
    );
    if (options.onExpired) {
      this.hook = {
        onExpired: options.onExpired,
        name: options.onExpired.name && options.onExpired.name !== 'onExpired' ? options.onExpired.name : 'onExpired',
        timeoutMs: options.hookTimeoutMs ?? DEFAULTS.expireHookTimeoutMs,
      };
    }
    this.schema = options.schema ?? DEFAULTS.schema;
    this.notify = { channel: intentsChannel(this.schema), payload: options.notifyPayload ?? '' };
    this.batchSize = options.batchSize ?? DEFAULTS.expiryBatch;
    this.clock = options.clock ?? databaseClock;
    this.logger = options.logger ?? defaultLibraryLogger();
    this.faults = options.faults ?? noFaults;
    this.intervalMs = options.intervalMs ?? DEFAULTS.expiryIntervalMs;
    this.spanAttributes = {
      [ATTR.dbSystem]: DB_SYSTEM,
      [ATTR.dbNamespace]: this.schema,
      [ATTR.dbCollection]: 'support_reservations',
      [ATTR.dbOperation]: 'UPDATE',
      [ATTR.dbQuerySummary]: 'holdsExpireDue',
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.messagingOperationType]: 'create',
      [ATTR.messagingDestination]: 'email_outbox',
    };
    this.loop = new ServiceLoop({
      name: 'expiry',
      intervalMs: this.intervalMs,
      logger: this.logger,
      tick: () => this.tick(),
      tickTimeoutMs: DEFAULTS.tickTimeoutMs,
    });
  }


  /** One batch: expire up to batchSize due holds in one transaction. */
  async runOnce(): Promise<ExpiryRun> {
    const started = process.hrtime.bigint();
    const now = this.clock.now();
    const batch = await inSpan('expire', { kind: 'client', attributes: this.spanAttributes }, async (span) => {
      // Without a hook or a fault to run between lock and commit, the batch
      // is its one statement, committed on its own: no BEGIN and COMMIT round
      // trips, and the rows are locked only while it runs. (The hold's
      // expired_at is the statement's start, so those round trips were part
      // of every email's time from expiry to send.)
      const batch = !this.hook && this.faults === noFaults ? await this.expireAlone(now) : await this.expireInTransaction(now);
      const rows = batch.expired;
      // Each expired hold's link back to the span that created it.
      linkHolds(span, () => rows.map((r) => ({ traceparent: r.traceparent, holdId: r.id, ...(r.intent_id ? { intentId: r.intent_id } : {}) })));
      annotate(span, () => ({
        [ATTR.messagingBatchCount]: rows.length,
        [ATTR.batchSize]: this.batchSize,
        [ATTR.holdIds]: capped(rows.map((r) => r.id)),
        [ATTR.intentIds]: capped(rows.flatMap((r) => (r.intent_id ? [r.intent_id] : []))),
      }));
      return batch;
    });
    const { expired, hookFailed, hookStored, outlook } = batch;
    // Intents handed off are this process's delivery worker's already: only the others need waking for.
    if (expired.filter((hold) => hold.intent_id !== null).length > (batch.handedOff ?? 0)) this.intentsCommitted();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (expired.length > 0) await this.faults.at('expiry.committed', { holds: expired.map((r) => r.id) });

    this.reportHookFailures(hookFailed, hookStored);
    const metrics = this.options.metrics;
    metrics?.holdsExpired.inc(expired.length);
    if (batch.handedOff) metrics?.emailsHandedOff.inc(batch.handedOff);
    metrics?.expiryBatchSize.observe(expired.length);
    metrics?.expiryTransactionSeconds.observe(seconds);
    this.logBatch(expired, batch.handedOff ?? 0);
    // The transaction has committed: an application may act on these (free its own slot) without seeing a rollback later.
    for (const hold of expired) {
      this.events.emit('expired', { holdId: hold.id, intentId: hold.intent_id, expiresAt: hold.expires_at, expiredAt: hold.expired_at });
    }
    const full = expired.length + hookFailed.length >= this.batchSize;
    this.lastFull = full;
    return { expired, full, hookFailed, ...(outlook ? { outlook } : {}) };
  }

  /** The batch's intents are committed: tell this process's delivery lane (ExpiryWorkerOptions.onIntentsCommitted). */
  private intentsCommitted(): void {
    try {
      this.options.onIntentsCommitted?.();
    } catch (error) {
      this.logger.warn({ event: 'expiry.intents_committed_failed', err: error }, 'onIntentsCommitted threw; delivery is woken by NOTIFY or its poll');
    }
  }

  /**
   * The batch as its one statement, committed on its own, which also reads
   * the outlook the loop sleeps on after a short batch. The statement
   * NOTIFYs intentsChannel when it created intents: delivered at commit, it
   * wakes delivery workers.
   */
  private async expireAlone(now: Date | null): Promise<ExpiryBatch> {
    // Behind a full batch the next is likely full too, and bigger than a hand-off takes: its slots stay the lane's.
    const ticket = this.lastFull ? undefined : this.options.handOff?.handOff();
    let run;
    try {
      run = await holdsExpireDueWithOutlook(
        this.options.pool,
        this.schema,
        this.batchSize,
        now,
        this.notify,
        this.options.noticeDeadlineSeconds ?? null,
        ticket?.lease ?? null,
      );
    } catch (error) {
      ticket?.deliver(null);
      throw error;
    }
    // Committed: the handed intents are the delivery worker's to send now (before this lane's own bookkeeping).
    ticket?.deliver(run.handed);
    return {
      expired: run.expired,
      hookFailed: [],
      hookStored: [],
      ...(run.outlook ? { outlook: run.outlook } : {}),
      handedOff: run.handed?.intents.length ?? 0,
    };
  }

  /**
   * The batch in a transaction: the hook's calls (bisected on failure) and
   * the faults run between lock and commit. A batch whose hook succeeds
   * whole read its outlook in its statement, as expireAlone's does.
   */
  private async expireInTransaction(now: Date | null): Promise<ExpiryBatch> {
    const notify = this.notify;
    const deadline = this.options.noticeDeadlineSeconds ?? null;
    const expire = (db: Queryable, only: readonly string[] | null) => holdsExpireDue(db, this.schema, this.batchSize, now, notify, deadline, only);
    return withTransaction(this.options.pool, async (client) => {
      let batch: ExpiryBatch = { expired: [], hookFailed: [], hookStored: [] };
      if (this.hook) {
        const whole = () => holdsExpireDueWithOutlook(client, this.schema, this.batchSize, now, notify, deadline);
        const hooked = await expireWithHook(client, this.schema, this.hook, (only) => expire(client, only), { whole });
        batch = {
          expired: hooked.expired,
          hookFailed: hooked.failed,
          hookStored: await this.recordHookFailures(client, hooked.failed, now),
          ...(hooked.outlook ? { outlook: hooked.outlook } : {}),
        };
      } else {
        batch.expired = await expire(client, null);
      }
      if (batch.expired.length > 0) await this.faults.at('expiry.locked', { holds: batch.expired.map((r) => r.id) });
      return batch;
    });
  }

  /**
   * One `holds.expired` event per batch at info (how many, how late the
   * latest, how many of its emails were handed off), and each hold's `hold.expired` and `intent.created` at debug:
   * at a thousand holds a second, two info lines per hold were most of the
   * log. `leasehold trace` tells one hold's story from the tables either way.
   */
  private logBatch(expired: readonly ExpiredHold[], handedOff: number): void {
    if (expired.length === 0) return;
    let latestMs = 0;
    let intents = 0;
    const debug = this.logger.isLevelEnabled?.('debug') ?? true;
    for (const hold of expired) {
      const latenessMs = hold.expired_at.getTime() - hold.expires_at.getTime();
      latestMs = Math.max(latestMs, latenessMs);
      if (hold.intent_id) intents += 1;
      if (!debug) continue;
      this.logger.debug({ event: 'hold.expired', holdId: hold.id, latenessMs }, 'hold expired');
      if (hold.intent_id) this.logger.debug({ event: 'intent.created', holdId: hold.id, intentId: hold.intent_id }, 'intent created');
    }
    this.logger.info({ event: 'holds.expired', holds: expired.length, intents, handedOff, latestMs }, 'holds expired');
  }

  /** In the batch's transaction: each failed hold's back-off. */
  private recordHookFailures(client: Queryable, failed: FailedHold[], now: Date | null): Promise<HookFailure[]> {
    return hookFailuresRecord(client, this.schema, failed, now, { baseMs: DEFAULTS.expireHookRetryBaseMs, maxMs: DEFAULTS.expireHookRetryMaxMs });
  }

  /** After the commit: each failed hold logged with its id and the database's error, and counted. */
  private reportHookFailures(failed: FailedHold[], stored: HookFailure[]): void {
    const byId = new Map(stored.map((f) => [f.holdId, f]));
    for (const failure of failed) {
      const row = byId.get(failure.holdId);
      this.options.metrics?.expireHookFailures.inc({ reason: failure.timedOut ? 'timeout' : 'error' });
      this.logger.warn(
        {
          event: 'expire_hook.failed',
          holdId: failure.holdId,
          hook: this.hook?.name,
          code: failure.code,
          error: failure.error,
          ...(row ? { attempts: row.attempts, retryAt: row.retryAt.toISOString() } : {}),
        },
        'expiry hook failed for this hold: it stays held and is tried again after its back-off',
      );
    }
  }

  private async tick(): Promise<TickResult> {
    const run = await this.runOnce();
    if (run.full) return { full: true };
    const outlook = run.outlook ?? (await holdsDueOutlook(this.options.pool, this.schema, this.clock.now()));
    this.options.metrics?.expiryLockContention.set(outlook.lockedElsewhere);
    // A test clock does not move while we sleep: fall back to the interval.
    if (this.clock !== databaseClock) return { full: false };
    let nextInMs = outlook.nextDueInMs === null ? undefined : Math.ceil(outlook.nextDueInMs);
    if (outlook.lockedElsewhere > 0) {
      // Due holds this run did not take: they fell due between the run's now
      // and the outlook's (common at high rates, and the last holds of a burst
      // would otherwise wait a whole interval), or another worker holds them
      // and will commit within milliseconds. Look again soon; back off only
      // while runs come back empty, so rows stuck under a hung transaction
      // are not polled hot.
      const progressed = run.expired.length > 0 || this.dueRetryMs === 0;
      this.dueRetryMs = progressed ? 1 : Math.min(this.intervalMs, this.dueRetryMs * 2);
      nextInMs = Math.min(nextInMs ?? this.dueRetryMs, this.dueRetryMs);
    } else {
      this.dueRetryMs = 0;
    }
    return nextInMs === undefined ? { full: false } : { full: false, nextInMs };
  }
}
