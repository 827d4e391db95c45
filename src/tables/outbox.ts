/**
 * Every statement on email_outbox, one row per email intent: the table's
 * one module, in files by who runs them.
 * - outbox/lane.ts: the lanes' statements (the expiry lane's insert, the
 *   delivery lane's reclaim and record), set-based, one per batch;
 * - outbox/lease.ts: the delivery lane's lease (fair.ts: its tenant sharing);
 * - outbox/operator.ts: what operators, the API and `trace` read and
 *   change (an intent, its page, replay, move, the backlog per account).
 * (outbox/fair.ts is lane.ts's tenant-sharing part; outbox/deadlines.ts the
 * delivery lane's sweep of intents past their deadline; outbox/hand-off.ts
 * the expiry statement's lease of its own intents.) Nothing outside tables/
 * imports these files: they are reached here.
 */
export * from './outbox/lane.js';
export * from './outbox/lease.js';
export * from './outbox/operator.js';
export * from './outbox/deadlines.js';
export * from './outbox/hand-off.js';
