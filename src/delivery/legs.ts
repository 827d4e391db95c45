import type pg from 'pg';
import type { Clock } from '../runtime/clock.js';
import { rateLimiterGetMany, rateLimiterTake } from '../tables/rate-limiter.js';
import { intentsLease, type LeasedIntent } from '../tables/outbox.js';
import { legsFor } from './routing.js';

/** One provider account as a round leases for it. */
export interface LegAccount {
  name: string;
  /** The gateway's name, recorded on each attempt. */
  provider: string;
  dailyQuota?: number;
}

export interface LeasedOnAccount {
  intent: LeasedIntent;
  account: string;
  /** The limiter take that paid for it (a refund of its permit applies only while that is the bucket's time). */
  bucketTime: string;
}

export interface LegsLease {
  leased: LeasedOnAccount[];
  /** Permits granted, over every account. */
  permits: number;
  /** Why no account granted any, when none did. */
  blocked?: 'paused' | 'cooling-down' | 'rate-limit';
  retryInMs: number;
}

/** How long a standby account's leg is skipped after it found nothing due. */
export const QUIET_LEG_MS = 1000;

/**
 * The lease step of a delivery round, across the provider accounts. With
 * one account, it takes every due intent. With several, the round reads
 * the accounts' states and plans its legs (routing.ts legsFor: each
 * account that keeps its intents, with the accounts whose intents it
 * carries); then per leg, in failover order and within the free slots, it
 * takes permits from that account's limiter and leases at most that many
 * intents routed to it. The lease gives back the permits it did not use.
 *
 * A leg after the first that found nothing is asked again only after
 * QUIET_LEG_MS: only intents that moved there can be due on it (new ones
 * start on the first account), so a standby account costs no statements
 * per round. `wake(account)` ends that wait when this worker moved an
 * intent there.
 */
export class AccountLegs {
  private readonly byName: ReadonlyMap<string, LegAccount>;
  private readonly failover: string[];
  private readonly quiet = new Map<string, number>();

  constructor(
    private readonly options: {
      pool: pg.Pool;
      schema: string;
      /** In failover order. */
      accounts: readonly LegAccount[];
      failoverAfterMs: number;
      leaseMs: number;
      clock: Clock;
    },
  ) {
    this.byName = new Map(options.accounts.map((a) => [a.name, a]));
    this.failover = options.accounts.map((a) => a.name);
  }

  async lease(slots: number, token: string, owner: number | undefined): Promise<LegsLease> {
    const { pool, schema, leaseMs, clock } = this.options;
    const legs = await this.plan();
    // Every account is paused (or cooling down past failover): nothing can go anywhere.
    if (legs.length === 0) return { leased: [], permits: 0, blocked: 'paused', retryInMs: 1000 };
    const leased: LeasedOnAccount[] = [];
    let free = slots;
    let permits = 0;
    let blocked: LegsLease['blocked'];
    let retryInMs = Infinity;
    for (const [i, leg] of legs.entries()) {
      if (free === 0) break;
      const quietUntil = this.quiet.get(leg.account);
      if (i > 0 && quietUntil !== undefined && quietUntil > Date.now()) continue;
      const account = this.byName.get(leg.account)!;
      const grant = await rateLimiterTake(pool, schema, free, null, leg.account, account.dailyQuota);
      if (grant.granted === 0) {
        blocked ??= grant.paused ? 'paused' : grant.coolingDown ? 'cooling-down' : 'rate-limit';
        retryInMs = Math.min(retryInMs, grant.retryInMs);
        continue;
      }
      permits += grant.granted;
      const intents = await intentsLease(pool, schema, {
        limit: grant.granted,
        leaseMs,
        token,
        provider: account.provider,
        account: leg.account,
        ...(leg.route ? { route: leg.route } : {}),
        // The attempts start when their permits were granted, so their
        // started_at obeys the limiter's bound exactly, however long this
        // process took to get from the take to the lease.
        now: clock.now() ?? grant.bucketTime,
        permits: { granted: grant.granted, bucketTime: grant.bucketTime },
        ...(owner !== undefined ? { owner } : {}),
      });
      free -= intents.length;
      if (intents.length === 0) this.quiet.set(leg.account, Date.now() + QUIET_LEG_MS);
      else this.quiet.delete(leg.account);
      for (const intent of intents) leased.push({ intent, account: leg.account, bucketTime: grant.bucketTime });
    }
    return { leased, permits, ...(blocked ? { blocked } : {}), retryInMs: Number.isFinite(retryInMs) ? retryInMs : 1000 };
  }

  /** Intents were moved to `account`: they are due there now. */
  wake(account: string): void {
    this.quiet.delete(account);
  }

  /** The round's legs, in failover order. */
  private async plan(): Promise<Array<{ account: string; route?: { from: string[]; known: string[]; first: string } }>> {
    if (this.failover.length === 1) return [{ account: this.failover[0]! }];
    const { pool, schema, clock, failoverAfterMs } = this.options;
    const states = await rateLimiterGetMany(pool, schema, this.failover, clock.now());
    const conditions = new Map(
      [...states].map(([name, state]) => {
        // A spent daily quota stops the account until the UTC day turns, as a pause does.
        const quota = this.byName.get(name)?.dailyQuota;
        const spent = quota !== undefined && state.quotaUsedToday >= quota;
        return [name, { paused: state.pause.paused || spent, coolingForMs: state.coolingForMs }];
      }),
    );
    return legsFor(this.failover, conditions, failoverAfterMs).map((leg) => ({
      account: leg.account,
      route: { from: leg.from, known: this.failover, first: this.failover[0]! },
    }));
  }
}
