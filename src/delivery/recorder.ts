import type pg from 'pg';
import { isConnectionError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { annotate, ATTR, capped, DB_SYSTEM, inSpan, MESSAGING_SYSTEM } from '../observability/tracing.js';
import type { Clock } from '../runtime/clock.js';
import { deliveryPause } from '../tables/delivery-control.js';
import { intentsRecord, type AttemptResult, type RecordedResult } from '../tables/outbox.js';
import { rateLimiterCooldown, rateLimiterPause } from '../tables/rate-limiter.js';
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
  /** Hand the lane events of a recorded round to in-process listeners. */
  emit: (events: ReturnType<typeof deliveryEvents>) => void;
}

/** Who a fleet-wide pause for a broken template is by. */
const TEMPLATES = 'templates';

/** Rounds of results kept for recording after a lost connection, at most. */
const MAX_KEPT_ROUNDS = 20;

/**
 * The last step of a delivery round: record its results in one fenced
 * statement, then apply what they mean for the fleet (a provider cooldown
 * or pause), count them and log one event per transition, and only then,
 * committed, tell in-process listeners.
 *
 * A record lost with its connection (a database restart, a purge) is kept
 * and made again before the worker's next round: the outcomes are known
 * here, so the intents need not wait out their leases and be sent a second
 * time. Fencing is the lease token's as always: a result whose lease has
 * moved on since changes only its attempt.
 */
export class RoundRecorder {
  private readonly kept: Array<{ results: AttemptResult[]; holdIds: Map<string, string>; traces: Map<string, string | null> }> = [];

  constructor(private readonly options: RecorderOptions) {}

  /** Record a round's results; `traces` are the holds' stored traceparents by intent id, for the record span's links. */
  async record(results: AttemptResult[], holdIds: Map<string, string>, traces: Map<string, string | null> = new Map()): Promise<void> {
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
      results.map((r) => ({ traceparent: traces.get(r.id), holdId: holdIds.get(r.id) ?? '', intentId: r.id, attempt: r.attempt }));
    await inSpan('record', { kind: 'client', attributes, holds }, async (span) => {
      annotate(span, () => ({
        // The round's distinct outcomes.
        [ATTR.outcome]: capped(results.map((r) => r.outcome)),
        [ATTR.account]: capped(results.map((r) => r.account ?? DEFAULT_ACCOUNT)),
        [ATTR.intentIds]: capped(results.map((r) => r.id)),
        [ATTR.holdIds]: capped(results.flatMap((r) => (holdIds.has(r.id) ? [holdIds.get(r.id)!] : []))),
      }));
      await this.recordRound(results, holdIds, traces);
    });
  }

  private async recordRound(results: AttemptResult[], holdIds: Map<string, string>, traces: Map<string, string | null>): Promise<void> {
    const { pool, schema, maxAttempts, clock, logger } = this.options;
    let recorded: RecordedResult[];
    try {
      recorded = await intentsRecord(pool, schema, results, { maxAttempts, now: clock.now() });
    } catch (error) {
      if (isConnectionError(error)) {
        this.kept.push({ results, holdIds, traces });
        // Bounded: past this, the oldest are left to their leases' expiry, as before.
        if (this.kept.length > MAX_KEPT_ROUNDS) this.kept.shift();
        logger.warn({ event: 'delivery.record_deferred', results: results.length }, 'results not recorded (connection lost); recording them again next round');
      }
      throw error;
    }
    await this.afterRecord(results, recorded, holdIds);
    this.options.emit(deliveryEvents(results, recorded, holdIds));
  }

  /** Record what record() kept after a lost connection, oldest first; on failure it is kept again and this throws. */
  async recordKept(): Promise<void> {
    while (this.kept.length > 0) {
      const { results, holdIds, traces } = this.kept.shift()!;
      await this.record(results, holdIds, traces);
    }
  }

  /** Fleet-wide side effects, metrics and one log event per transition. */
  private async afterRecord(results: AttemptResult[], recorded: RecordedResult[], holdIds: Map<string, string>): Promise<void> {
    const { pool, schema, metrics, logger } = this.options;
    const byId = new Map(recorded.map((r) => [r.id, r]));
    // Consequences for the account (a cooldown, a pause) or the fleet (a
    // broken template), applied once per round however many sends reported
    // them, and whether or not the lease was still ours.
    const cooldowns = new Map<string, number>();
    // By account; a broken template apart (it pauses the fleet, whatever the account is named).
    const pauses = new Map<string, AttemptResult>();
    let templatePause: AttemptResult | undefined;
    for (const result of results) {
      const row = byId.get(result.id);
      const account = result.account ?? DEFAULT_ACCOUNT;
      const ids = { holdId: holdIds.get(result.id), intentId: result.id, attempt: result.attempt, account };
      metrics?.sends.inc({ outcome: result.outcome, account });
      if (result.outcomeUnknown) metrics?.outcomeUnknown.inc({ account });
      if (result.outcome === 'rate_limited') {
        metrics?.rateLimited.inc({ account });
        cooldowns.set(account, Math.max(cooldowns.get(account) ?? 0, result.providerWaitMs ?? 0));
      }
      if (result.outcome === 'paused') {
        // A broken template is the fleet's problem, not one account's.
        if (result.providerCode === TEMPLATE_ERROR_CODE) templatePause ??= result;
        else if (!pauses.has(account)) pauses.set(account, result);
      }
      if (row && !row.applied) {
        logger.warn({ event: 'intent.fenced', ...ids, outcome: result.outcome }, 'lease no longer ours; result recorded on the attempt only');
        continue;
      }
      switch (result.outcome) {
        case 'accepted':
          logger.info(
            { event: 'intent.accepted', ...ids, receipt: result.receipt, possibleDuplicate: row?.possibleDuplicate ?? false },
            'intent accepted',
          );
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
      if (row && row.state !== 'pending') metrics?.attemptsPerIntent.observe({ state: row.state }, row.attempts);
    }
    for (const [account, ms] of cooldowns) if (ms > 0) await rateLimiterCooldown(pool, schema, ms, null, account);
    if (templatePause) await this.pause(undefined, templatePause, holdIds);
    for (const [account, pause] of pauses) await this.pause(account, pause, holdIds);
  }

  /**
   * A provider's answer paused `account` (undefined: a broken template
   * paused the fleet). An operator's pause, or a longer provider pause, outranks
   * it and stays as it was.
   */
  private async pause(account: string | undefined, pause: AttemptResult, holdIds: Map<string, string>): Promise<void> {
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
        holdId: holdIds.get(pause.id),
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
