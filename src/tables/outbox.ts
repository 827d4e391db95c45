/**
 * Every statement on email_outbox, one row per email intent: the table's
 * one module, in two files by who runs them.
 * - outbox/lane.ts: the lanes' statements (the expiry lane's insert, the
 *   delivery lane's lease, reclaim and record), set-based, one per batch;
 * - outbox/operator.ts: what operators, the API and `trace` read and
 *   change (an intent, its page, replay, move, the backlog per account).
 * (outbox/fair.ts is lane.ts's tenant-sharing part.) Nothing outside tables/
 * imports these files: they are reached here.
 */
export * from './outbox/lane.js';
export * from './outbox/operator.js';
