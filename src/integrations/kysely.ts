import { CompiledQuery, type QueryResult } from 'kysely';
import { holdHelpers, statement } from './calls.js';

/**
 * leasehold/kysely: holds inside a Kysely transaction.
 *
 *   await db.transaction().execute(async (trx) => {
 *     await trx.insertInto('bookings').values(booking).execute();
 *     await createHold(trx, { id: booking.id, customerEmail, ttlSeconds: 1200 });
 *   });
 *
 * `trx` is a Transaction (or the Kysely instance itself, outside one). The
 * call is one parameterised statement (CompiledQuery.raw), so it runs on
 * the transaction's connection and commits or rolls back with it.
 */
export interface KyselyExecutor {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions } from './calls.js';

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<KyselyExecutor>((trx, c, schema) => {
  const { text, values } = statement(c, schema);
  return trx.executeQuery(CompiledQuery.raw(text, values));
});
