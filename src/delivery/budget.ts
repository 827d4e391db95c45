import type pg from 'pg';
import type { Slots } from '../runtime/slots.js';
import { rateLimiterRefund, rateLimiterTake, type PermitGrant } from '../tables/rate-limiter.js';
import { roundEmails } from '../model/delivery-policy.js';
import type { SendingAccount } from './accounts.js';
import { membersOf, type SendRequest } from './requests.js';

/** What a take of permits on one account carries into the lease. */
export interface Grant {
  /** Permits granted (0: none; see `blocked`). */
  permits: number;
  /** Emails those permits carry: what the lease may take at most. */
  emails: number;
  /** The bucket's time of the take: the attempts it pays for start then, and a refund applies only while it is still the bucket's time. */
  bucketTime: string;
  blocked: 'paused' | 'cooling-down' | 'rate-limit';
  retryInMs: number;
}

/** A take, as the round keeps it until it is settled. */
interface Take {
  account: SendingAccount;
  permits: number;
  /** Emails the take paid for that are still this round's: the permits the lease statement gave back are not. */
  emails: number;
  bucketTime: string;
}

/**
 * What one delivery round may spend, and the one owner of it: the send
 * slots it reserved (a slot is one provider request in flight; the
 * worker's `concurrency` is shared by its rounds) and the permits it took
 * from each account's limiter. Everything a round takes goes back through
 * here:
 *
 * - `take` permits on an account for at most the free slots' emails
 *   (`takeWith`: a statement that takes them itself, as a lease may;
 *   `paidElsewhere`: the expiry statement took them for a hand-off);
 * - `leased` what a lease spent of them (the lease statement itself gives
 *   back the permits it did not use, where a permit is an email) and the
 *   slots its requests need;
 * - `settle` once the requests are known: give back the permits they do not
 *   use (a suppressed or unrenderable email, a request cheaper than
 *   planned), or take the few more that singles sent beside batches need,
 *   and say which requests are paid for;
 * - `keepSlots`, `requestDone`: slots go back as soon as the round knows it
 *   will not need them, one per request as each send ends;
 * - `release`: whatever is left, slots and unsettled permits, when the
 *   round ends however it ends.
 */
export class RoundBudget {
  private held: number;
  /** Slots promised to the requests of the accounts leased so far. */
  private used = 0;
  private readonly takes = new Map<string, Take>();

  private constructor(
    private readonly slots: Slots,
    held: number,
    private readonly db: { pool: pg.Pool; schema: string; roundEmails: number },
  ) {
    this.held = held;
  }

  /** Reserve up to `wanted` slots (waiting until at least one is free). */
  static async reserve(slots: Slots, wanted: number, db: { pool: pg.Pool; schema: string; roundEmails: number }): Promise<RoundBudget> {
    return new RoundBudget(slots, await slots.reserve(wanted), db);
  }

  /** Reserve up to `wanted` slots now, or undefined when none is free (a hand-off, delivery/hand-off.ts, does not wait). */
  static tryReserve(slots: Slots, wanted: number, db: { pool: pg.Pool; schema: string; roundEmails: number }): RoundBudget | undefined {
    const held = slots.tryReserve(wanted);
    return held > 0 ? new RoundBudget(slots, held, db) : undefined;
  }

  /** Slots the round holds now: at most this many of its requests can be in flight. */
  get heldSlots(): number {
    return this.held;
  }

  /** Slots not yet promised to a request. */
  get freeSlots(): number {
    return Math.max(0, this.held - this.used);
  }

  /** Permits on `account` for at most what the free slots can carry (a batch per slot on an account sending batches). */
  async take(account: SendingAccount): Promise<Grant> {
    const { pool, schema } = this.db;
    return (await this.takeWith(account, async (want) => ({ grant: await rateLimiterTake(pool, schema, want, null, account.name, account.dailyQuota, account.perPermit) }))).grant;
  }

  /**
   * As take, through `statement`: one that takes the permits itself (a
   * lease that takes its own, tables/outbox/lease.ts
   * intentsLeaseOneTenantTaking) and answers the grant beside what else it
   * did. The permits are this budget's from then on, as a take's are.
   */
  async takeWith<T extends { grant: PermitGrant }>(account: SendingAccount, statement: (want: number) => Promise<T>): Promise<Omit<T, 'grant'> & { grant: Grant }> {
    const emails = roundEmails(this.freeSlots, this.db.roundEmails, account.batch);
    const answer = await statement(Math.ceil(emails / account.perPermit));
    const { grant } = answer;
    const blocked = grant.paused ? 'paused' : grant.coolingDown ? 'cooling-down' : 'rate-limit';
    const carried = grant.granted === 0 ? 0 : Math.min(emails, grant.granted * account.perPermit, grant.quotaLeft ?? Infinity);
    if (grant.granted > 0) this.takes.set(account.name, { account, permits: grant.granted, emails: grant.granted * account.perPermit, bucketTime: grant.bucketTime });
    return { ...answer, grant: { permits: grant.granted, emails: carried, bucketTime: grant.bucketTime, blocked, retryInMs: grant.retryInMs } };
  }

  /**
   * Permits on `account` taken by another statement on this round's behalf
   * (the expiry statement of a hand-off, delivery/hand-off.ts), for the
   * `emails` it leased: this budget's from now on, as a take's are.
   */
  paidElsewhere(account: SendingAccount, permits: number, emails: number, bucketTime: string): void {
    this.takes.set(account.name, { account, permits, emails, bucketTime });
  }

  /**
   * The lease on `account` took `intents` emails, to go in `requests`
   * provider requests. Where a permit is an email the lease statement gave
   * back the permits it did not use; what stays is one per leased email.
   */
  leased(account: SendingAccount, intents: number, requests: number): void {
    const take = this.takes.get(account.name);
    if (take && account.perPermit === 1) take.emails = Math.min(take.emails, intents);
    this.used += requests;
  }

  /**
   * The requests the round will send on `account`, known now: give back
   * the permits they do not use, or take the few more that they need, and
   * return those that are paid for (in order; one that got no permit is
   * not sent, and the requests at the end are the ones that wait).
   */
  async settle(account: SendingAccount, requests: readonly SendRequest[]): Promise<SendRequest[]> {
    const take = this.takes.get(account.name);
    if (!take) return [...requests];
    this.takes.delete(account.name);
    const { pool, schema } = this.db;
    const emails = requests.reduce((n, r) => n + membersOf(r).length, 0);
    const permitsUsed = account.perPermit === 1 ? emails : requests.length;
    const spare = take.permits - permitsUsed;
    const emailsSpare = take.emails - emails;
    if (account.perPermit === 1) {
      // The lease gave back what it did not lease: these are emails leased and not sent.
      if (emailsSpare > 0) await rateLimiterRefund(pool, schema, emailsSpare, take.bucketTime, account.name, emailsSpare);
      return [...requests];
    }
    if (spare > 0 || emailsSpare > 0) await rateLimiterRefund(pool, schema, Math.max(0, spare), take.bucketTime, account.name, Math.max(0, emailsSpare));
    if (spare >= 0) return [...requests];
    const more = await rateLimiterTake(pool, schema, -spare, null, account.name, account.dailyQuota, account.perPermit);
    return requests.slice(0, requests.length - (-spare - more.granted));
  }

  /** The round needs at most `requests` slots from now on: the rest go back. */
  keepSlots(requests: number): void {
    this.give(this.held - Math.max(0, requests));
    this.used = Math.min(this.used, this.held);
  }

  /** One request's send ended: its slot goes back, so the next round can lease while this one records. */
  requestDone(): void {
    this.give(1);
  }

  /**
   * Everything still held goes back: the slots, and the permits of every
   * take the round did not settle (it threw between its lease and its
   * sends: nothing went out on that account, so its permits, and the
   * emails counted against a daily quota, are returned as `settle(account,
   * [])` would). A refund that fails (the database the round lost) leaves
   * those permits spent: the bucket refills, a quota count stays until the
   * UTC day turns.
   */
  async release(): Promise<void> {
    this.give(this.held);
    const unsettled = [...this.takes.values()];
    for (const take of unsettled) await this.settle(take.account, []).catch(() => {});
  }

  private give(n: number): void {
    const k = Math.min(Math.max(0, n), this.held);
    if (k === 0) return;
    this.held -= k;
    this.slots.release(k);
  }
}
