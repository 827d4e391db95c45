/**
 * When a webhook that failed is tried again: pure, no clock of its own and
 * no I/O, so every case is tested alone (test/webhooks/retry.test.ts).
 *
 * - Without Retry-After: exponential back-off from `baseMs`, tripled per
 *   attempt up to `capMs`, with jitter over the upper half of the step
 *   ("equal jitter"), so events that failed together (an endpoint's outage)
 *   spread out instead of coming back as one wave, yet never come back
 *   sooner than half the step.
 * - With Retry-After (seconds, or an HTTP date): the endpoint said when;
 *   never sooner than that, plus up to 10% (at most 30 s) so a fleet does
 *   not return on the same second. A wait beyond `maxRetryAfterMs` is held
 *   to it: an endpoint cannot park its events past the give-up bound.
 */

export interface RetryRule {
  baseMs: number;
  capMs: number;
  /** The longest wait a Retry-After can ask for. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_RULE: RetryRule = { baseMs: 5_000, capMs: 3_600_000, maxRetryAfterMs: 86_400_000 };

/**
 * A Retry-After header's wait in ms at `now`, or undefined when absent or
 * not one of the two forms RFC 9110 allows. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  // An HTTP date (IMF-fixdate, or the obsolete forms Date.parse reads); a bare number or a sign is not one.
  if (!/[A-Za-z]/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

/**
 * How long to wait after failed attempt number `attempt` (1 for the first),
 * given the answer's Retry-After wait if it had one. `random` is in [0, 1).
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | undefined, random: number, rule: RetryRule = DEFAULT_RETRY_RULE): number {
  if (retryAfterMs !== undefined) {
    const asked = Math.min(Math.max(0, retryAfterMs), rule.maxRetryAfterMs);
    return Math.round(asked + random * Math.min(asked * 0.1, 30_000));
  }
  const step = Math.min(rule.capMs, rule.baseMs * 3 ** Math.max(0, Math.min(attempt - 1, 30)));
  return Math.round(step / 2 + random * (step / 2));
}

/** Given up: the event was written at `createdAt` and the next try would come after the bound. */
export function givenUp(createdAt: Date, nextAt: Date, giveUpAfterMs: number): boolean {
  return nextAt.getTime() - createdAt.getTime() > giveUpAfterMs;
}
