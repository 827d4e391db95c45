import type pg from 'pg';
import type { Clock } from '../runtime/clock.js';
import { rateLimiterGetMany, rateLimiterTake } from '../tables/rate-limiter.js';
import { intentsLease, type LeasedIntent } from '../tables/outbox.js';
import { batchesCloseStale } from '../tables/batches.js';
import type { QuotaUnit } from '../model/accounts.js';
import { legsFor } from './routing.js';
import { planRequests } from './requests.js';
import { roundEmails } from '../model/delivery-policy.js';

/** One provider account as a round leases for it. */
export interface LegAccount {
  name: string;
  /** The gateway's name, recorded on each attempt. */
  provider: string;
  dailyQuota?: number;
  /** Emails per provider request (1: no batches). */
  batch: number;
  /** What one limiter permit stands for. */
  unit: QuotaUnit;
  /** The provider deduplicates a batch on its key: open batches are leased whole, before new intents. */
  keyed: boolean;
  /** How long the provider keeps a batch's key (keyed accounts). */
  keyLifetimeMs?: number;
}

export interface LeasedOnAccount {
  intent: LeasedIntent;
  account: string;
  /** The limiter take that paid for it (a refund of its permit applies only while that is the bucket's time). */
  bucketTime: string;
}

/**
 * A take on a `requests` account sending batches: its permits are spent
 * per request, which the round knows only once it has planned them; it
 * gives back what its requests did not use (DeliveryWorker).
 */
export interface RequestPermits {
  account: string;
  granted: number;
  /** Emails each permit could carry (the daily quota counts emails). */
  perPermit: number;
  bucketTime: string;
}

export interface LegsLease {
  leased: LeasedOnAccount[];
  /** Permits granted, over every account. */
  permits: number;
  /** Emails the permits could carry, over every account (permits, where a permit is an email). */
  capacity: number;
  /** Provider requests the leased intents take at most. */
  requests: number;
  /** Takes whose unused permits are given back after the round planned its requests. */
  requestPermits: RequestPermits[];
  /** Why no account granted any, when none did. */
  blocked?: 'paused' | 'cooling-down' | 'rate-limit';
  retryInMs: number;
}

/** How long a standby account's leg is skipped after it found nothing due. */
export const QUIET_LEG_MS = 1000;

/** How often a round looks for open batches that can no longer be resent whole (batchesCloseStale). */
const STALE_BATCHES_EVERY_MS = 10_000;

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
 *
 * Slots are provider requests in flight. On an account sending batches a
 * leg leases up to `batch` emails per free slot (at most a round's worth:
 * the larger of the round size and one batch), and its permits are what
 * the account's `unit` says: one per request, or one per email. A keyed
 * account (Resend) first leases its open batches whole: a batch whose
 * outcome is unknown goes again before anything new.
 */
export class AccountLegs {
  private readonly byName: ReadonlyMap<string, LegAccount>;
  private readonly failover: string[];
  /** Accounts outside failover: they send only for tenants routed to them. */
  private readonly routedOnly: string[];
  private readonly quiet = new Map<string, number>();
  private readonly staleCheckedAt = new Map<string, number>();

  constructor(
    private readonly options: {
      pool: pg.Pool;
      schema: string;
      /** Every account: those of `failover` and those only routed tenants use. */
      accounts: readonly LegAccount[];
      /** The accounts intents try, in order. */
      failover: readonly string[];
      failoverAfterMs: number;
      leaseMs: number;
      clock: Clock;
      /** Emails one round leases at most on an account sending batches, if one batch is smaller. */
      roundEmails: number;
    },
  ) {
    this.byName = new Map(options.accounts.map((a) => [a.name, a]));
    this.failover = [...options.failover];
    this.routedOnly = options.accounts.map((a) => a.name).filter((n) => !this.failover.includes(n));
  }

  async lease(slots: number, token: string, owner: number | undefined): Promise<LegsLease> {
    const legs = await this.plan();
    const result: LegsLease = { leased: [], permits: 0, capacity: 0, requests: 0, requestPermits: [], retryInMs: 1000 };
    // Every account is paused (or cooling down past failover): nothing can go anywhere.
    if (legs.length === 0) return { ...result, blocked: 'paused' };
    let free = slots;
    let retryInMs = Infinity;
    for (const [i, leg] of legs.entries()) {
      if (free === 0) break;
      const quietUntil = this.quiet.get(leg.account);
      if (i > 0 && quietUntil !== undefined && quietUntil > Date.now()) continue;
      const account = this.byName.get(leg.account)!;
      const taken = await this.leg(account, leg.route, free, token, owner);
      if (taken.granted === 0) {
        result.blocked ??= taken.blocked;
        retryInMs = Math.min(retryInMs, taken.retryInMs);
        continue;
      }
      result.permits += taken.granted;
      result.capacity += taken.capacity;
      free -= taken.requests;
      result.requests += taken.requests;
      if (taken.requestPermits) result.requestPermits.push(taken.requestPermits);
      if (taken.intents.length === 0) this.quiet.set(leg.account, Date.now() + QUIET_LEG_MS);
      else this.quiet.delete(leg.account);
      for (const intent of taken.intents) result.leased.push({ intent, account: leg.account, bucketTime: taken.bucketTime });
    }
    if (Number.isFinite(retryInMs)) result.retryInMs = retryInMs;
    return result;
  }

  /** One account's leg: its permits, then its open batches (keyed accounts), then new intents. */
  private async leg(
    account: LegAccount,
    route: { from: string[]; known: string[]; first: string } | undefined,
    free: number,
    token: string,
    owner: number | undefined,
  ): Promise<{
    granted: number;
    capacity: number;
    requests: number;
    intents: LeasedIntent[];
    bucketTime: string;
    requestPermits?: RequestPermits;
    blocked: NonNullable<LegsLease['blocked']>;
    retryInMs: number;
  }> {
    const { pool, schema, leaseMs, clock } = this.options;
    const batching = account.batch > 1;
    const perPermit = batching && account.unit === 'requests' ? account.batch : 1;
    const emails = roundEmails(free, this.options.roundEmails, account.batch);
    const grant = await rateLimiterTake(pool, schema, Math.ceil(emails / perPermit), null, account.name, account.dailyQuota, perPermit);
    const blocked = grant.paused ? 'paused' : grant.coolingDown ? 'cooling-down' : 'rate-limit';
    const base = { granted: grant.granted, bucketTime: grant.bucketTime, blocked, retryInMs: grant.retryInMs } as const;
    if (grant.granted === 0) return { ...base, capacity: 0, requests: 0, intents: [] };
    const capacity = Math.min(emails, grant.granted * perPermit, grant.quotaLeft ?? Infinity);
    const common = {
      leaseMs,
      token,
      provider: account.provider,
      account: account.name,
      // The attempts start when their permits were granted, so their
      // started_at obeys the limiter's bound exactly, however long this
      // process took to get from the take to the lease.
      now: clock.now() ?? grant.bucketTime,
      ...(owner !== undefined ? { owner } : {}),
    };
    const intents: LeasedIntent[] = [];
    let spent = 0;
    if (batching && account.keyed) {
      await this.closeStaleBatches(account);
      const open = await intentsLease(pool, schema, {
        ...common,
        // Requests: a batch costs one permit, whatever its size. Emails: each member costs one.
        limit: perPermit > 1 ? Math.min(free, grant.granted) : free,
        batches: { emails: capacity },
      });
      intents.push(...open);
      spent = perPermit > 1 ? new Set(open.map((i) => i.batchId)).size : open.length;
    }
    // What the permits left after the open batches carry.
    const room = Math.min(capacity - intents.length, perPermit > 1 ? (grant.granted - spent) * perPermit : Infinity);
    const fresh = room <= 0 ? [] : await intentsLease(pool, schema, {
      ...common,
      limit: room,
      ...(route ? { route } : {}),
      // A permit per email: the lease gives back those it did not use, in the same statement.
      ...(perPermit === 1 ? { permits: { granted: grant.granted - spent, bucketTime: grant.bucketTime } } : {}),
    });
    intents.push(...fresh);
    const requests = planRequests(intents, { batch: account.batch, keyed: account.keyed }).length;
    return {
      ...base,
      capacity,
      requests,
      intents,
      ...(perPermit > 1 ? { requestPermits: { account: account.name, granted: grant.granted, perPermit, bucketTime: grant.bucketTime } } : {}),
    };
  }

  /** At most every STALE_BATCHES_EVERY_MS per account: open batches past their key's lifetime, or broken, go singly. */
  private async closeStaleBatches(account: LegAccount): Promise<void> {
    const now = Date.now();
    if ((this.staleCheckedAt.get(account.name) ?? 0) + STALE_BATCHES_EVERY_MS > now) return;
    this.staleCheckedAt.set(account.name, now);
    await batchesCloseStale(this.options.pool, this.options.schema, account.name, account.keyLifetimeMs ?? 24 * 3_600_000);
  }

  /** Intents were moved to `account`: they are due there now. */
  wake(account: string): void {
    this.quiet.delete(account);
  }

  /** The round's legs, in failover order. */
  private async plan(): Promise<Array<{ account: string; route?: { from: string[]; known: string[]; first: string } }>> {
    const known = [...this.failover, ...this.routedOnly];
    if (known.length === 1) return [{ account: this.failover[0]! }];
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
    // An account outside failover takes only its routed tenants' email (from: none).
    const routed = this.routedOnly.map((account) => ({ account, route: { from: [] as string[], known, first: this.failover[0]! } }));
    return [
      ...legsFor(this.failover, conditions, failoverAfterMs).map((leg) => ({
        account: leg.account,
        route: { from: leg.from, known, first: this.failover[0]! },
      })),
      ...routed,
    ];
  }
}
