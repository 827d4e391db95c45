import { ValidationError } from '../errors.js';

/**
 * The rules for the fleet-wide delivery controls, in one place: the rate
 * limit's policy and a pause's reason. The configuration, the CLI, the API
 * and the library all validate through these, so they can never disagree.
 */

/**
 * Most delivery rounds one worker runs side by side. With concurrency above
 * the batch, ceil(concurrency / batch) rounds (at most this many) overlap,
 * each on its own loop and, while a statement runs, its own connection.
 */
export const MAX_ROUNDS_IN_FLIGHT = 4;

/** Intents one round leases at most: the batch, never above concurrency. */
export const roundSize = (batch: number, concurrency: number): number => Math.max(1, Math.min(batch, concurrency));

/** Rounds one delivery worker runs side by side. */
export const roundsInFlight = (batch: number, concurrency: number): number =>
  Math.min(MAX_ROUNDS_IN_FLIGHT, Math.ceil(concurrency / roundSize(batch, concurrency)));

/**
 * Emails one round leases on an account sending `batch` emails per request
 * with `slots` request slots free (a slot is a request in flight): up to a
 * batch per slot, but no more than the larger of the round size and one
 * batch. Without batches, one email per slot.
 */
export const roundEmails = (slots: number, roundSize: number, batch: number): number =>
  batch <= 1 ? slots : Math.min(slots * batch, Math.max(roundSize, batch));

export interface RateLimitPolicy {
  perSecond: number;
  burst: number;
}

/**
 * The slowest policy: one send per 1,000 s. Anything slower is a pause (use
 * pause), and rates near float8's smallest values make `per_second * elapsed`
 * underflow in PostgreSQL, which errors instead of rounding to 0.
 */
export const MIN_PER_SECOND = 0.001;
export const MAX_PER_SECOND = 1_000_000;
export const MAX_BURST = 1_000_000;

export const PER_SECOND_RULE = `must be a number from ${MIN_PER_SECOND} to ${MAX_PER_SECOND}`;
export const BURST_RULE = `must be a whole number from 1 to ${MAX_BURST}`;

export function isValidPerSecond(perSecond: unknown): perSecond is number {
  return typeof perSecond === 'number' && Number.isFinite(perSecond) && perSecond >= MIN_PER_SECOND && perSecond <= MAX_PER_SECOND;
}

export function validatePerSecond(perSecond: unknown): number {
  if (!isValidPerSecond(perSecond)) throw new ValidationError('perSecond', PER_SECOND_RULE);
  return perSecond;
}

export function validateBurst(burst: unknown): number {
  if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 1 || burst > MAX_BURST) {
    throw new ValidationError('burst', BURST_RULE);
  }
  return burst;
}

export function validatePolicy(policy: { perSecond?: unknown; burst?: unknown }): RateLimitPolicy {
  return { perSecond: validatePerSecond(policy.perSecond), burst: validateBurst(policy.burst) };
}

/** `by` for pauses an operator asked for (API, CLI, dashboard); anything else is a provider's name. */
export const PAUSED_BY_OPERATOR = 'operator';

export const MAX_PAUSE_REASON = 500;
export const PAUSE_REASON_RULE = `must be 1-${MAX_PAUSE_REASON} characters`;

/** The reason shown when an operator pauses without giving one. */
export const DEFAULT_PAUSE_REASON = 'paused by an operator';

/** Longest pause with an end: a year (longer is an indefinite pause). */
export const MAX_PAUSE_SECONDS = 31_536_000;

/** A pause's length in seconds (`forSeconds`), when one is given. */
export function validatePauseSeconds(forSeconds: number | undefined): void {
  if (forSeconds !== undefined && !(Number.isFinite(forSeconds) && forSeconds > 0 && forSeconds <= MAX_PAUSE_SECONDS)) {
    throw new ValidationError('forSeconds', `must be a number of seconds from more than 0 to ${MAX_PAUSE_SECONDS}`);
  }
}

/** A pause's reason, trimmed: shown by status, /healthz and the dashboard. */
export function validatePauseReason(reason: unknown, field = 'reason'): string {
  const trimmed = typeof reason === 'string' ? reason.trim() : '';
  if (trimmed.length === 0 || trimmed.length > MAX_PAUSE_REASON) throw new ValidationError(field, PAUSE_REASON_RULE);
  return trimmed;
}
