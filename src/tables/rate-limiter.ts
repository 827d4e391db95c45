/**
 * Every statement on rate_limiter: one row per provider account
 * (model/accounts.ts), named by the account, holding that account's shared
 * token bucket (policy and state), its cooldown after a 429 and its own
 * pause. The bucket is refilled from the database clock and shared by every
 * delivery process on every machine. model/token-bucket.ts is the same
 * formula in TypeScript, for in-process use and tests.
 *
 * Taking permits is one statement that also reads the fleet-wide pause
 * (delivery_control), the account's pause and its cooldown, so the policy,
 * a pause and a 429 reach every worker on its next request. The row lock is held only
 * for that statement; workers take permits in batches, so the row is
 * touched a few hundred times a second even at thousands of sends a second.
 *
 * In files by who runs them:
 * - rate-limiter/state.ts: the row as operators and read models see it,
 *   policy changes and the account's pause;
 * - rate-limiter/permits.ts: the delivery lane's take, refund and cooldown;
 * - rate-limiter/bucket-sql.ts: the refill and the day's quota, in SQL,
 *   shared by both;
 * - rate-limiter/endpoint-permits.ts: a webhook endpoint's take from its
 *   own row (`webhook:<name>`), without email's pauses and quota.
 * Nothing outside tables/ imports these files: they are reached here.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

export * from './rate-limiter/state.js';
export * from './rate-limiter/permits.js';
export * from './rate-limiter/endpoint-permits.js';
