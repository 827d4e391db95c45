import type pg from 'pg';
import type { Clock } from '../runtime/clock.js';
import { rateLimiterGetMany } from '../tables/rate-limiter.js';
import { intentsLease, intentsLeaseOneTenant, intentsLeaseOneTenantTaking, type LeasedIntent } from '../tables/outbox.js';
import { batchesCloseStale } from '../tables/batches.js';
import { legsFor } from './routing.js';
import { planRequests, type SendRequest } from './requests.js';
import type { AccountSet, SendingAccount } from './accounts.js';
import type { RoundBudget } from './budget.js';

/** What a round leased on one account, and the requests that will send it (planned once, here). */
export interface AccountLease {
  account: SendingAccount;
  intents: LeasedIntent[];
  requests: SendRequest[];
}

export interface RoundLease {
  /** Per account that leased anything, in failover order. */
  legs: AccountLease[];
  /** Permits granted, over every account. */
  permits: number;
  /** Emails the permits could carry, over every account (permits, where a permit is an email). */
  capacity: number;
  /**
   * Some account's lease took all it was allowed to (as many open batches
   * as its permits paid for, or as many intents as they carried): more may
   * be due there now, so the lane runs again at once rather than waiting
   * for a wake-up.
   */
  saturated: boolean;
  /** Why no account granted any, when none did. */
  blocked?: 'paused' | 'cooling-down' | 'rate-limit';
  retryInMs: number;
}

type Route = { from: string[]; known: string[]; first: string };

/** How long a standby account's leg is skipped after it found nothing due. */
export const QUIET_LEG_MS = 1000;

/** How long a fleet of one account leases fairly before trying the one-tenant form again, after it found several tenants. */
const ONE_TENANT_RETRY_MS = 1000;

/** How often a round looks for open batches that can no longer be resent whole (batchesCloseStale). */
const STALE_BATCHES_EVERY_MS = 10_000;

/**
 * The lease step of a delivery round, across the provider accounts. With
 * one account, it takes every due intent. With several, the round reads
 * the accounts' states and plans its legs (routing.ts legsFor: each
 * account that keeps its intents, with the accounts whose intents it
 * carries); then per leg, in failover order and within the free slots, it
 * takes permits from that account's limiter (RoundBudget) and leases at
 * most that many intents routed to it, and plans the requests that will
 * send them: the slots those requests need are not free for the next leg.
 *
 * A leg after the first that found nothing is asked again only after
 * QUIET_LEG_MS: only intents that moved there can be due on it (new ones
 * start on the first account), so a standby account costs no statements
 * per round. `wake(account)` ends that wait when this worker moved an
 * intent there.
 *
 * A keyed account (Resend) first leases its open batches whole: a batch
 * whose outcome is unknown goes again before anything new.
 */
export class AccountLegs {
  private readonly quiet = new Map<string, number>();
  /** Until when the fresh lease goes straight to the fair form (more than one tenant had pending email). */
  private fairUntil = 0;
  private readonly staleCheckedAt = new Map<string, number>();

  constructor(
    private readonly options: {
      pool: pg.Pool;
      schema: string;
      accounts: AccountSet;
      failoverAfterMs: number;
      leaseMs: number;
      clock: Clock;
    },
  ) {}

  async lease(budget: RoundBudget, token: string, owner: number | undefined): Promise<RoundLease> {
    const legs = await this.plan();
    const result: RoundLease = { legs: [], permits: 0, capacity: 0, saturated: false, retryInMs: 1000 };
    // Every account is paused (or cooling down past failover): nothing can go anywhere.
    if (legs.length === 0) return { ...result, blocked: 'paused' };
    let retryInMs = Infinity;
    for (const [i, leg] of legs.entries()) {
      if (budget.freeSlots === 0) break;
      const quietUntil = this.quiet.get(leg.account.name);
      if (i > 0 && quietUntil !== undefined && quietUntil > Date.now()) continue;
      // The common round (one account, a permit an email, one tenant) takes its permits in its lease statement.
      const taken = this.takesInLease(leg) ? await this.leaseTaking(budget, leg.account, token, owner) : undefined;
      const grant = taken?.grant ?? (await budget.take(leg.account));
      if (grant.permits === 0) {
        result.blocked ??= grant.blocked;
        retryInMs = Math.min(retryInMs, grant.retryInMs);
        continue;
      }
      const { intents, saturated } = taken?.intents
        ? { intents: taken.intents, saturated: taken.intents.length >= grant.emails }
        : await this.leaseOn(leg.account, leg.route, grant, budget.freeSlots, token, owner);
      if (saturated) result.saturated = true;
      const requests = planRequests(intents, leg.account);
      budget.leased(leg.account, intents.length, requests.length);
      result.permits += grant.permits;
      result.capacity += grant.emails;
      if (intents.length === 0) {
        // Nothing due here: its permits go back now.
        await budget.settle(leg.account, []);
        this.quiet.set(leg.account.name, Date.now() + QUIET_LEG_MS);
        continue;
      }
      this.quiet.delete(leg.account.name);
      result.legs.push({ account: leg.account, intents, requests });
    }
    if (Number.isFinite(retryInMs)) result.retryInMs = retryInMs;
    return result;
  }

  /**
   * One account's intents: its open batches first (keyed accounts), then
   * new intents, within what its permits carry; saturated when either
   * lease reached its limit (a round of one request's permit that resent
   * one open batch leaves the next one due, and the singles behind it).
   */
  private async leaseOn(
    account: SendingAccount,
    route: Route | undefined,
    grant: { permits: number; emails: number; bucketTime: string },
    /** Slots free for this account's requests: a batch each. */
    free: number,
    token: string,
    owner: number | undefined,
  ): Promise<{ intents: LeasedIntent[]; saturated: boolean }> {
    const { pool, schema, leaseMs, clock } = this.options;
    const perRequest = account.perPermit > 1;
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
    if (account.keyed) {
      await this.closeStaleBatches(account);
      // Requests: a batch costs one permit, whatever its size. Emails: each member costs one.
      const limit = perRequest ? Math.min(free, grant.permits) : free;
      const open = await intentsLease(pool, schema, { ...common, limit, batches: { emails: grant.emails } });
      intents.push(...open);
      const batches = new Set(open.map((i) => i.batchId)).size;
      spent = perRequest ? batches : open.length;
      if (batches >= limit) return { intents, saturated: true };
    }
    // What the permits left after the open batches carry.
    const room = Math.min(grant.emails - intents.length, perRequest ? (grant.permits - spent) * account.perPermit : Infinity);
    if (room <= 0) return { intents, saturated: intents.length > 0 };
    const fresh = {
      ...common,
      limit: room,
      // A permit per email: the lease gives back those it did not use, in the same statement.
      ...(perRequest ? {} : { permits: { granted: grant.permits - spent, bucketTime: grant.bucketTime } }),
    };
    // One account (no route): the one-tenant form first, the fair lease when it does not apply.
    const oneTenant = route ? null : await this.leaseOneTenant(fresh);
    const leased = oneTenant ?? (await intentsLease(pool, schema, { ...fresh, ...(route ? { route } : {}) }));
    intents.push(...leased);
    return { intents, saturated: leased.length >= room };
  }

  /**
   * A fleet of one account leases with the one-tenant form while at most
   * one tenant, without a policy, has pending email (the same intents, a
   * statement that plans in a third of the time); null when it did not
   * hold: the fair lease follows in the same round, and the one-tenant form
   * is tried again after ONE_TENANT_RETRY_MS.
   */
  private async leaseOneTenant(lease: Parameters<typeof intentsLeaseOneTenant>[2]): Promise<LeasedIntent[] | null> {
    if (!this.oneTenantLikely()) return null;
    const leased = await intentsLeaseOneTenant(this.options.pool, this.options.schema, lease);
    if (leased === null) this.oneTenantMissed();
    return leased;
  }

  /**
   * A fleet of one account whose permit is an email and that sends no
   * batches, while the one-tenant form applies: the take and the lease are
   * one statement (intentsLeaseOneTenantTaking), one round trip fewer a round.
   */
  private takesInLease(leg: { account: SendingAccount; route?: Route }): boolean {
    return leg.route === undefined && !leg.account.keyed && leg.account.perPermit === 1 && this.oneTenantLikely();
  }

  /** The take and the one-tenant lease in one statement; intents null when the case did not hold (the grant stands: the fair lease follows). */
  private async leaseTaking(budget: RoundBudget, account: SendingAccount, token: string, owner: number | undefined) {
    const { pool, schema, leaseMs, clock } = this.options;
    const taken = await budget.takeWith(account, (want) =>
      intentsLeaseOneTenantTaking(pool, schema, {
        limit: want,
        leaseMs,
        token,
        provider: account.provider,
        account: account.name,
        now: clock.now(),
        ...(owner !== undefined ? { owner } : {}),
        ...(account.dailyQuota !== undefined ? { dailyQuota: account.dailyQuota } : {}),
      }),
    );
    if (taken.intents === null) this.oneTenantMissed();
    return taken;
  }

  /** The one-tenant form is worth trying: it held the last time, or was last missed ONE_TENANT_RETRY_MS ago. */
  private oneTenantLikely(): boolean {
    return Date.now() >= this.fairUntil;
  }

  /** More than one tenant had pending email: the fair lease straight away until ONE_TENANT_RETRY_MS from now. */
  private oneTenantMissed(): void {
    this.fairUntil = Date.now() + ONE_TENANT_RETRY_MS;
  }

  /** At most every STALE_BATCHES_EVERY_MS per account: open batches past their key's lifetime, or broken, go singly. */
  private async closeStaleBatches(account: SendingAccount): Promise<void> {
    const now = Date.now();
    if ((this.staleCheckedAt.get(account.name) ?? 0) + STALE_BATCHES_EVERY_MS > now) return;
    this.staleCheckedAt.set(account.name, now);
    await batchesCloseStale(this.options.pool, this.options.schema, account.name, account.keyLifetimeMs);
  }

  /** Intents were moved to `account`: they are due there now. */
  wake(account: string): void {
    this.quiet.delete(account);
  }

  /** The round's legs, in failover order. */
  private async plan(): Promise<Array<{ account: SendingAccount; route?: Route }>> {
    const { accounts } = this.options;
    const { failover, routedOnly, byName } = accounts;
    if (accounts.all.length === 1) return [{ account: byName.get(failover[0]!)! }];
    const known = [...failover, ...routedOnly];
    const first = failover[0]!;
    const { pool, schema, clock, failoverAfterMs } = this.options;
    const states = await rateLimiterGetMany(pool, schema, [...failover], clock.now());
    const conditions = new Map(
      [...states].map(([name, state]) => {
        // A spent daily quota stops the account until the UTC day turns, as a pause does.
        const quota = byName.get(name)?.dailyQuota;
        const spent = quota !== undefined && state.quotaUsedToday >= quota;
        return [name, { paused: state.pause.paused || spent, coolingForMs: state.coolingForMs }];
      }),
    );
    return [
      ...legsFor(failover, conditions, failoverAfterMs).map((leg) => ({ account: byName.get(leg.account)!, route: { from: leg.from, known, first } })),
      // An account outside failover takes only its routed tenants' email (from: none).
      ...routedOnly.map((name) => ({ account: byName.get(name)!, route: { from: [] as string[], known, first } })),
    ];
  }
}
