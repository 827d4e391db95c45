import { holdHelpers, statement } from './calls.js';

/**
 * leasehold/knex: holds inside a Knex transaction (the `pg` client).
 *
 *   await knex.transaction(async (trx) => {
 *     await trx('bookings').insert(booking);
 *     await createHold(trx, { id: booking.id, customerEmail, ttlSeconds: 1200 });
 *   });
 *
 * One `trx.raw(text, bindings)` with `?` placeholders, so the values are
 * bound parameters. Knex itself is not imported: any object with Knex's
 * `raw` (a Transaction, or the Knex instance outside one) will do.
 */
export interface KnexExecutor {
  raw(sql: string, bindings: readonly unknown[]): PromiseLike<unknown>;
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions } from './calls.js';

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<KnexExecutor>((trx, c, schema) => {
  const { text, values } = statement(c, schema, () => '?');
  return trx.raw(text, values);
});
