/**
 * Which account each intent goes through: pure rules over the accounts'
 * state, read once per round (tables/rate-limiter.ts rateLimiterGetMany).
 *
 * An intent is on one account (email_outbox.account; none yet: the first
 * in failover). It moves on, to the next account in failover order after
 * its own that can send (wrapping round), while its account
 * - is paused (a provider's pause or an operator's pause of that account),
 * - has spent its daily quota (until the UTC day turns), or
 * - has been cooling down (429) for longer than `failoverAfterMs`;
 * and, one intent at a time, after a send that provably never left
 * (nextAccount, recorded with the result).
 * It never moves while an attempt with an unknown outcome holds it to its
 * account (pinned_account; the lease statement enforces that in SQL): only
 * that account's idempotency key or lookup can settle it.
 */

export interface AccountCondition {
  /** The account's own pause is in force, or its daily quota is spent. */
  paused: boolean;
  /** How long the cooldown in force has lasted (ms; 0 or undefined: none). */
  coolingForMs?: number;
}

/** Whether an account keeps its intents: not paused, and not cooling down past the failover threshold. */
export function keepsIntents(condition: AccountCondition | undefined, failoverAfterMs: number): boolean {
  if (!condition) return true;
  return !condition.paused && (condition.coolingForMs ?? 0) <= failoverAfterMs;
}

export interface Leg {
  account: string;
  /** Intents on these accounts (and not pinned elsewhere) are this account's to send. */
  from: string[];
}

/**
 * The round's legs: for each account that keeps its intents, in failover
 * order, the accounts whose intents it sends (its own, and those of the
 * accounts before it, wrapping round, that do not keep theirs). No legs:
 * every account has stopped.
 */
export function legsFor(failover: readonly string[], conditions: ReadonlyMap<string, AccountCondition>, failoverAfterMs: number): Leg[] {
  const keeps = failover.map((name) => keepsIntents(conditions.get(name), failoverAfterMs));
  const legs: Leg[] = [];
  failover.forEach((account, i) => {
    if (!keeps[i]) return;
    const from = [account];
    // Walk back from the account before this one until one that keeps its own.
    for (let k = 1; k < failover.length; k++) {
      const j = (i - k + failover.length) % failover.length;
      if (keeps[j]) break;
      from.push(failover[j]!);
    }
    legs.push({ account, from });
  });
  return legs;
}

/** The account after `account` in failover (wrapping round); undefined with one account. */
export function nextAccount(failover: readonly string[], account: string): string | undefined {
  if (failover.length < 2) return undefined;
  const i = failover.indexOf(account);
  return failover[(i + 1) % failover.length];
}
