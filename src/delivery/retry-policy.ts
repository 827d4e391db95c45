/**
 * When to try an intent again. Pure, so the schedule is tested without a
 * database; `random` is injectable.
 */
export interface RetryPolicy {
  /** First failure backs off up to this much; doubles per failed attempt. */
  baseMs: number;
  /** Longest backoff. */
  capMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { baseMs: 2_000, capMs: 10 * 60_000 };

/**
 * Exponential backoff with full jitter (uniform in [0, min(cap, base * 2^n))):
 * intents that failed together retry spread over the whole window instead of
 * stampeding the provider again at the same instant.
 */
export function failureDelayMs(failedAttemptsSoFar: number, policy: RetryPolicy = defaultRetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(failedAttemptsSoFar, 30));
  return Math.floor(random() * ceiling);
}

/**
 * After a provider rate limit: never before the provider's retry-after, then
 * spread by a random share of it (at least 250 ms), so intents limited at the
 * same moment come back at different moments. The seed's `seed % (base/5)`
 * gave identical delays to intents with equal attempt counts.
 */
export function rateLimitDelayMs(retryAfterMs: number, random: () => number = Math.random): number {
  const base = Math.max(0, retryAfterMs);
  const spread = Math.max(250, base * 0.25);
  return Math.ceil(base + random() * spread);
}
