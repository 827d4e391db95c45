import { IntentStateError, NotFoundError, ValidationError } from './errors.js';
import { PAUSED_BY_OPERATOR, validatePolicy, type RateLimitPolicy } from './model/delivery-policy.js';
import type { Intent } from './model/intent-states.js';
import { silentLogger, type Logger } from './observability/logger.js';
import { databaseClock, type Clock } from './runtime/clock.js';
import type { Queryable } from './db/pool.js';
import { deliveryControlGet, deliveryPause, deliveryResume, type DeliveryControl } from './tables/delivery-control.js';
import { messagesDiscardFinished } from './tables/messages.js';
import { intentsGet, intentsReplay } from './tables/outbox.js';
import { rateLimiterEnsure, rateLimiterGet, rateLimiterSet, type RateLimitState } from './tables/rate-limiter.js';

/**
 * What an operator does to a running fleet: pause, resume, replay, change
 * the rate limit. One place, so the CLI, the API and the dashboard (through
 * the API) do exactly the same thing and log the same one event per change.
 */

export interface OperationsOptions {
  /** A pool, or a client inside the application's transaction. */
  pool: Queryable;
  schema: string;
  /** The policy a fresh limiter row starts with (LEASEHOLD_RATE_PER_SECOND, LEASEHOLD_RATE_BURST). */
  initialRate: RateLimitPolicy;
  logger?: Logger;
  clock?: Clock;
}

/** The reason shown when an operator pauses without giving one. */
export const DEFAULT_PAUSE_REASON = 'paused by an operator';

/** Longest pause with an end: a year (longer is an indefinite pause). */
export const MAX_PAUSE_SECONDS = 31_536_000;

export class Operations {
  private readonly pool: Queryable;
  private readonly schema: string;
  private readonly initialRate: RateLimitPolicy;
  private readonly logger: Logger;
  private readonly clock: Clock;

  constructor(options: OperationsOptions) {
    this.pool = options.pool;
    this.schema = options.schema;
    this.initialRate = options.initialRate;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? databaseClock;
  }

  delivery(): Promise<DeliveryControl> {
    return deliveryControlGet(this.pool, this.schema, this.clock.now());
  }

  /** Pause delivery fleet-wide; with `forSeconds` it lifts itself. An operator's pause outranks any provider's. */
  async pause(options: { reason?: string; forSeconds?: number } = {}): Promise<DeliveryControl> {
    const reason = options.reason ?? DEFAULT_PAUSE_REASON;
    const { forSeconds } = options;
    if (forSeconds !== undefined && !(Number.isFinite(forSeconds) && forSeconds > 0 && forSeconds <= MAX_PAUSE_SECONDS)) {
      throw new ValidationError('forSeconds', `must be a number of seconds from more than 0 to ${MAX_PAUSE_SECONDS}`);
    }
    const control = await deliveryPause(this.pool, this.schema, {
      reason,
      by: PAUSED_BY_OPERATOR,
      now: this.clock.now(),
      ...(forSeconds !== undefined ? { untilMs: forSeconds * 1000 } : {}),
    });
    this.logger.info(
      { event: 'delivery.paused', reason: control.reason, by: PAUSED_BY_OPERATOR, until: control.pausedUntil },
      'delivery paused',
    );
    return control;
  }

  /** Lift any pause. Returns the state before and after. */
  async resume(): Promise<{ before: DeliveryControl; after: DeliveryControl }> {
    const before = await this.delivery();
    const after = await deliveryResume(this.pool, this.schema, this.clock.now());
    this.logger.info({ event: 'delivery.resumed', by: PAUSED_BY_OPERATOR, wasPaused: before.paused }, 'delivery resumed');
    return { before, after };
  }

  async replay(intentId: string): Promise<Intent> {
    const intent = await replayIntent(this.pool, intentId, { schema: this.schema, now: this.clock.now() });
    this.logger.info({ event: 'intent.replayed', intentId: intent.id, holdId: intent.holdId, replays: intent.replays }, 'intent replayed');
    return intent;
  }

  /** The shared limiter's policy and state; a fleet that never started gets the configured initial policy. */
  async rateLimit(): Promise<RateLimitState> {
    const now = this.clock.now();
    const current = await rateLimiterGet(this.pool, this.schema, now);
    if (current) return current;
    await rateLimiterEnsure(this.pool, this.schema, this.initialRate);
    return (await rateLimiterGet(this.pool, this.schema, now))!;
  }

  /** Change the policy; either half alone keeps the other half of the current policy. */
  async setRateLimit(change: { perSecond?: number; burst?: number }): Promise<RateLimitState> {
    if (change.perSecond === undefined && change.burst === undefined) {
      throw new ValidationError('perSecond', 'give perSecond, burst or both');
    }
    const current = await this.rateLimit();
    const policy = validatePolicy({ perSecond: change.perSecond ?? current.perSecond, burst: change.burst ?? current.burst });
    const state = await rateLimiterSet(this.pool, this.schema, policy, this.clock.now());
    this.logger.info({ event: 'rate_limit.changed', ...policy }, 'rate limit changed');
    return state;
  }
}

/**
 * Send an intent again, on purpose, without touching its hold: a finished
 * intent (sent, rejected or dead) goes back to pending with a fresh attempt
 * budget. Its replay count changes the provider idempotency key
 * (`<id>#replay-<n>`), so a provider that deduplicates still sends it.
 * A pending intent is refused: it is already going to be sent. So is an
 * intent whose recipient was erased (retention): there is nobody to send to.
 *
 * A replay is the one time a message may change: its stored rendering is
 * dropped first (only while the intent is finished, so no pending intent
 * ever loses its snapshot mid-retries), and the next send renders it again
 * from the templates of that moment.
 */
export async function replayIntent(
  db: Queryable,
  id: string,
  options: { schema?: string; now?: Date | null } = {},
): Promise<Intent> {
  const schema = options.schema ?? 'leasehold';
  await messagesDiscardFinished(db, schema, id);
  const replayed = await intentsReplay(db, schema, id, options.now ?? null);
  const intent = await intentsGet(db, schema, id);
  if (!intent) throw new NotFoundError('intent', id);
  if (!replayed) {
    const message =
      intent.state === 'pending'
        ? `intent ${JSON.stringify(id)} is already pending`
        : `intent ${JSON.stringify(id)} cannot be replayed: its recipient was erased`;
    throw new IntentStateError(id, intent.state, message);
  }
  return intent;
}
