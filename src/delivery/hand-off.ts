import { randomUUID } from 'node:crypto';
import type { Logger } from '../observability/logger.js';
import type { HandedIntents } from '../tables/holds.js';
import type { HandOffLease } from '../tables/outbox.js';
import type { AccountSet, SendingAccount } from './accounts.js';
import type { RoundBudget } from './budget.js';
import type { RoundLease } from './legs.js';
import { planRequests } from './requests.js';
import { leaseInSpan } from './spans.js';

/**
 * The hand-off between the two lanes of one process. When the expiry lane
 * is about to run its statement (not behind a full batch: a backlog), it
 * asks the delivery worker beside it (DeliveryWorker.handOff) whether it
 * can send that batch's email at once. If it can, the worker reserves send
 * slots and names a lease token, and
 * the expiry statement leases the intents it creates to that token in the
 * same statement (tables/outbox/hand-off.ts: all or none, with the
 * account's permits taken there, and only when no older email is waiting
 * and no tenant of the batch has a policy). The worker then renders, sends
 * and records them as the rest of a delivery round, at once: no NOTIFY,
 * wake-up or lease statement between the expiry's commit and the send.
 * Whatever the statement did not lease is created pending, as without a
 * hand-off, and the lane leases it as usual.
 *
 * Every guarantee is the lease's: the intents carry a lease token (fenced
 * records), an attempt opened with the worker's presence (reclaimed within
 * seconds if the process dies), and a lease that expires (resent, flagged,
 * if the process stalls).
 */

/** Most intents one expiry batch hands off: a bigger batch is a backlog, which the fair lease shares out. */
export const HAND_OFF_MAX = 100;

/** What the expiry lane asks the delivery worker beside it (DeliveryWorker implements it). */
export interface HandOffTarget {
  /** A ticket when the worker could send a batch at once now; undefined when it could not (the batch's intents are then created pending). */
  handOff(): HandOffTicket | undefined;
}

export interface HandOffTicket {
  /** What the expiry statement leases with (holdsExpireDueWithOutlook's `handOff`). */
  readonly lease: HandOffLease;
  /**
   * The statement's answer: the intents it leased, sent from here on; null
   * when it leased none or failed (the slots go back). Called exactly once.
   */
  deliver(handed: HandedIntents | null): void;
}

/**
 * The account a worker's hand-offs lease on, or undefined when it takes
 * none: only a worker of one account, so that no routing or failover has
 * a say in where a batch's intents go. Whatever its unit and batch size:
 * the handed intents are fresh (never sent, bound to no batch) and are
 * planned into requests as the lane's own lease would plan them.
 */
export function handOffAccount(accounts: AccountSet): SendingAccount | undefined {
  const [only, ...more] = accounts.all;
  return only && more.length === 0 && accounts.routedOnly.length === 0 ? only : undefined;
}

/**
 * A delivery worker's hand-offs: the tickets it gives, the round each one
 * starts once its batch is handed over, and stop()'s wait for them.
 */
export class HandOffs {
  /** Tickets given and not yet ended (delivered and their round over). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly setting: {
      account: SendingAccount;
      leaseMs: number;
      schema: string;
      logger: Logger;
      /** The worker's presence id now (db/presence.ts), named on each attempt. */
      owner: () => number | undefined;
      /** The rest of a round, prepare -> send -> record (DeliveryWorker), on a lease made here. */
      deliver: (lease: RoundLease, budget: RoundBudget, token: string) => Promise<unknown>;
    },
  ) {}

  /** A ticket for one batch within `budget`, whose slots are reserved for it; the budget is released when the ticket's round ends. */
  ticket(budget: RoundBudget): HandOffTicket {
    const { account, leaseMs, logger } = this.setting;
    const token = randomUUID();
    let end: () => void = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.inFlight.add(ended);
    let delivered = false;
    return {
      lease: {
        token,
        leaseMs,
        provider: account.provider,
        account: account.name,
        owner: this.setting.owner(),
        limit: budget.heldSlots,
        dailyQuota: account.dailyQuota,
        emailsPerPermit: account.perPermit,
      },
      deliver: (handed) => {
        if (delivered) return;
        delivered = true;
        void this.round(budget, token, handed)
          .catch((error: unknown) => logger.error({ event: 'delivery.hand_off_failed', err: error }, 'a handed-off round failed; its intents are sent again when their lease expires'))
          .finally(() => {
            this.inFlight.delete(ended);
            end();
          });
      },
    };
  }

  /** Resolves once every ticket given so far has ended. */
  async ended(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  /** A hand-off's round: the statement leased `handed` (and spent their permits); what is left is prepare -> send -> record. */
  private async round(budget: RoundBudget, token: string, handed: HandedIntents | null): Promise<void> {
    const { account, schema } = this.setting;
    try {
      if (!handed) return;
      const requests = planRequests(handed.intents, account);
      const n = handed.intents.length;
      budget.paidElsewhere(account, Math.ceil(n / account.perPermit), n, handed.bucketTime);
      budget.leased(account, n, requests.length);
      budget.keepSlots(requests.length);
      // The lease span a round's story has, for the lease the expiry statement made.
      const lease = await leaseInSpan(
        schema,
        budget.heldSlots,
        async () => ({ legs: [{ account, intents: handed.intents, requests }], permits: n, capacity: n, saturated: false, retryInMs: 0 }),
        'holdsExpireDue (hand-off)',
      );
      await this.setting.deliver(lease, budget, token);
    } finally {
      await budget.release();
    }
  }
}
