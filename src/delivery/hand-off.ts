import type { HandedIntents } from '../tables/holds.js';
import type { HandOffLease } from '../tables/outbox.js';
import type { AccountSet, SendingAccount } from './accounts.js';

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
