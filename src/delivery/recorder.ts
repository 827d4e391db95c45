import type pg from 'pg';
import { isConnectionError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { annotate, ATTR, capped, DB_SYSTEM, inSpan, MESSAGING_SYSTEM } from '../observability/tracing.js';
import type { Clock } from '../runtime/clock.js';
import { deliveryPause } from '../tables/delivery-control.js';
import { intentsRecord, type AttemptResult, type LeasedIntent, type RecordedResult } from '../tables/outbox.js';
import { rateLimiterCooldown, rateLimiterPause } from '../tables/rate-limiter.js';
import { suppressionsAdd } from '../tables/suppressions.js';
import { DEFAULT_ACCOUNT } from '../model/accounts.js';
import { deliveryEvents } from './events.js';
import { TEMPLATE_ERROR_CODE } from './messages.js';

export interface RecorderOptions {
  pool: pg.Pool;
  schema: string;
  maxAttempts: number;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /** Who a provider's pause of `account` is by (its gateway's name). */
  providerOf: (account: string) => string;
  /** Hand the lane events of a recorded round to in-process listeners; made only if someone listens. */
  emit: (events: () => ReturnType<typeof deliveryEvents>) => void;
}

/** Who a fleet-wide pause for a broken template is by. */
const TEMPLATES = 'templates';

/** What the record needs of the leased intents it reports on, by intent id. */
export type RoundIntents = ReadonlyMap<string, Pick<LeasedIntent, 'holdId' | 'holdTraceparent' | 'recipient'>>;

/** Rounds of results kept for recording after a lost connection, at most. */
const MAX_KEPT_ROUNDS = 20;

/**
 * The last step of a delivery round: record its results in one fenced
 * statement, then apply what they mean for the fleet (a provider cooldown
 * or pause, an address the provider called inactive), count them and log
 * them (one `delivery.recorded` event per round; one event per intent at
 * debug, and every warning), and only then, committed, tell in-process
 * listeners.
 *
 * A record lost with its connection (a database restart, a purge) is kept
 * and made again before the worker's next round: the outcomes are known
 * here, so the intents need not wait out their leases and be sent a second
 * time. Fencing is the lease token's as always: a result whose lease has
 * moved on since changes only its attempt.
 */
export class RoundRecorder {
  private readonly kept: Array<{ results: AttemptResult[]; intents: RoundIntents }> = [];

  constructor(private readonly options: RecorderOptions) {}

  /** Record a round's results; `intents` are the round's leased intents (hold ids, the holds' traceparents for the record span's links). */
  async record(results: AttemptResult[], intents: RoundIntents): Promise<void> {
    const { schema } = this.options;
    const attributes = {
      [ATTR.dbSystem]: DB_SYSTEM,
      [ATTR.dbNamespace]: schema,
      [ATTR.dbCollection]: 'email_outbox',
      [ATTR.dbOperation]: 'UPDATE',
      [ATTR.dbQuerySummary]: 'intentsRecord',
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.messagingOperationType]: 'settle',
      [ATTR.messagingBatchCount]: results.length,
    };
    const holds = () =>
      results.map((r) => ({ traceparent: intents.get(r.id)?.holdTraceparent, holdId: intents.get(r.id)?.holdId ?? '', intentId: r.id, attempt: r.attempt }));
    await inSpan('record', { kind: 'client', attributes, holds }, async (span) => {
      annotate(span, () => ({
        // The round's distinct outcomes.
        [ATTR.outcome]: capped(results.map((r) => r.outcome)),
        [ATTR.account]: capped(results.map((r) => r.account ?? DEFAULT_ACCOUNT)),
        [ATTR.intentIds]: capped(results.map((r) => r.id)),
        [ATTR.holdIds]: capped(results.flatMap((r) => (intents.has(r.id) ? [intents.get(r.id)!.holdId] : []))),
      }));
      await this.recordRound(results, intents);
    });
  }

  private async recordRound(results: AttemptResult[], intents: RoundIntents): Promise<void> {
    const { pool, schema, maxAttempts, clock, logger } = this.options;
    let recorded: RecordedResult[];
    try {
      recorded = await intentsRecord(pool, schema, results, { maxAttempts, now: clock.now() });
    } catch (error) {
      if (isConnectionError(error)) {
        this.kept.push({ results, intents });
        // Bounded: past this, the oldest are left to their leases' expiry, as before.
        if (this.kept.length > MAX_KEPT_ROUNDS) this.kept.shift();
        logger.warn({ event: 'delivery.record_deferred', results: results.length }, 'results not recorded (connection lost); recording them again next round');
      }
      throw error;
    }
    await this.afterRecord(results, recorded, intents);
    await this.suppressInactive(results, intents);
    this.options.emit(() => deliveryEvents(results, recorded, intents));
  }

  /** Record what record() kept after a lost connection, oldest first; on failure it is kept again and this throws. */
  async recordKept(): Promise<void> {
    while (this.kept.length > 0) {
      const { results, intents } = this.kept.shift()!;
      await this.record(results, intents);
    }
  }

  /** Fleet-wide side effects, metrics, and the round's log: one event, and one per intent at debug (every warning at warn). */
  private async afterRecord(results: AttemptResult[], recorded: RecordedResult[], intents: RoundIntents): Promise<void> {
    const { pool, schema, metrics, logger } = this.options;
    const byId = new Map(recorded.map((r) => [r.id, r]));
    // Each intent's story at debug: checked once, so a round at info builds no per-intent log fields.
    const debug = logger.isLevelEnabled?.('debug') ?? true;
    // Consequences for the account (a cooldown, a pause) or the fleet (a
    // broken template), applied once per round however many sends reported
    // them, and whether or not the lease was still ours.
    const cooldowns = new Map<string, number>();
    // By account; a broken template apart (it pauses the fleet, whatever the account is named).
    const pauses = new Map<string, AttemptResult>();
    let templatePause: AttemptResult | undefined;
    // Sends by outcome and account, counted once per round.
    const sends = new Map<string, { outcome: AttemptResult['outcome']; account: string; n: number }>();
    const outcomes: Partial<Record<AttemptResult['outcome'], number>> = {};
    let fenced = 0;
    for (const result of results) {
      const row = byId.get(result.id);
      const account = result.account ?? DEFAULT_ACCOUNT;
      const key = `${result.outcome}\u0000${account}`;
      const counted = sends.get(key);
      if (counted) counted.n += 1;
      else sends.set(key, { outcome: result.outcome, account, n: 1 });
      outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
      if (result.outcomeUnknown) metrics?.outcomeUnknown.inc({ account });
      if (result.outcome === 'rate_limited') cooldowns.set(account, Math.max(cooldowns.get(account) ?? 0, result.providerWaitMs ?? 0));
      if (result.outcome === 'paused') {
        // A broken template is the fleet's problem, not one account's.
        if (result.providerCode === TEMPLATE_ERROR_CODE) templatePause ??= result;
        else if (!pauses.has(account)) pauses.set(account, result);
      }
      if (row && row.state !== 'pending' && row.applied) metrics?.attemptsPerIntent.observe({ state: row.state }, row.attempts);
      if (row && !row.applied) fenced += 1;
      if (result.outcome === 'accepted' && row?.applied !== false && !debug) continue;
      this.logResult(result, row, { holdId: intents.get(result.id)?.holdId, intentId: result.id, attempt: result.attempt, account });
    }
    for (const { outcome, account, n } of sends.values()) {
      metrics?.sends.inc({ outcome, account }, n);
      if (outcome === 'rate_limited') metrics?.rateLimited.inc({ account }, n);
    }
    logger.info({ event: 'delivery.recorded', intents: results.length, outcomes, ...(fenced > 0 ? { fenced } : {}) }, 'round recorded');
    for (const [account, ms] of cooldowns) if (ms > 0) await rateLimiterCooldown(pool, schema, ms, null, account);
    if (templatePause) await this.pause(undefined, templatePause, intents);
    for (const [account, pause] of pauses) await this.pause(account, pause, intents);
  }

  /** One intent's result, as the transition it made: at debug when it is routine (accepted), else warn or error. */
  private logResult(
    result: AttemptResult,
    row: RecordedResult | undefined,
    ids: { holdId: string | undefined; intentId: string; attempt: number; account: string },
  ): void {
    const { logger } = this.options;
    if (row && !row.applied) {
      logger.warn({ event: 'intent.fenced', ...ids, outcome: result.outcome }, 'lease no longer ours; result recorded on the attempt only');
      return;
    }
    switch (result.outcome) {
      case 'accepted':
        logger.debug({ event: 'intent.accepted', ...ids, receipt: result.receipt, possibleDuplicate: row?.possibleDuplicate ?? false }, 'intent accepted');
        break;
      case 'rate_limited':
        logger.warn({ event: 'intent.rate_limited', ...ids, retryInMs: result.delayMs }, 'provider rate limit');
        break;
      case 'rejected':
        logger.warn({ event: 'intent.rejected', ...ids, reason: result.error, code: result.providerCode }, 'intent rejected');
        break;
      case 'failed':
        if (result.moveTo) logger.warn({ event: 'intent.failed_over', ...ids, to: result.moveTo, reason: result.error }, 'send never left; the intent moves to the next account');
        if (row?.state === 'dead') {
          logger.error({ event: 'intent.dead', ...ids, reason: result.error }, 'intent dead after max attempts');
        } else {
          logger.warn(
            { event: 'intent.failed', ...ids, reason: result.error, outcomeUnknown: result.outcomeUnknown, retryInMs: result.delayMs },
            'send failed; will retry',
          );
        }
        break;
      case 'paused':
        logger.info({ event: 'intent.released', ...ids, reason: result.error }, 'intent released while delivery is paused');
        break;
    }
  }

  /** Addresses a provider answered are inactive (Postmark 406) join the suppression list: no account sends to them again. */
  private async suppressInactive(results: AttemptResult[], intents: RoundIntents): Promise<void> {
    const inactive = results.filter((r) => r.suppressRecipient && intents.has(r.id));
    if (inactive.length === 0) return;
    const entries = inactive.map((r) => ({
      address: intents.get(r.id)!.recipient,
      reason: 'hard_bounce' as const,
      detail: r.error,
      provider: this.options.providerOf(r.account ?? DEFAULT_ACCOUNT),
    }));
    const added = await suppressionsAdd(this.options.pool, this.options.schema, entries);
    if (added.length > 0) this.options.metrics?.suppressionsAdded.inc({ reason: 'hard_bounce' }, added.length);
  }

  /**
   * A provider's answer paused `account` (undefined: a broken template
   * paused the fleet). An operator's pause, or a longer provider pause, outranks
   * it and stays as it was.
   */
  private async pause(account: string | undefined, pause: AttemptResult, intents: RoundIntents): Promise<void> {
    const { pool, schema, logger } = this.options;
    const reason = pause.error ?? 'provider asked to pause';
    const fleet = account === undefined;
    const by = account === undefined ? TEMPLATES : this.options.providerOf(account);
    const untilMs = pause.providerWaitMs !== undefined ? { untilMs: pause.providerWaitMs } : {};
    const control =
      account === undefined
        ? await deliveryPause(pool, schema, { reason, by, ...untilMs })
        : await rateLimiterPause(pool, schema, account, { reason, by, ...untilMs });
    const kept = control !== undefined && (control.pausedBy !== by || control.reason !== reason);
    logger.error(
      {
        event: fleet ? 'delivery.paused' : 'account.paused',
        ...(fleet ? {} : { account }),
        holdId: intents.get(pause.id)?.holdId,
        intentId: pause.id,
        attempt: pause.attempt,
        reason,
        by,
        ...(kept ? { inForce: { by: control.pausedBy, reason: control.reason, until: control.pausedUntil } } : {}),
      },
      kept
        ? 'provider answer asked to pause; the pause already in force stays'
        : fleet
          ? 'delivery paused: a template is broken'
          : 'account paused by provider answer; its intents move to the next account in failover',
    );
  }
}
