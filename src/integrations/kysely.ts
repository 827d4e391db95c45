import { CompiledQuery, type QueryResult } from 'kysely';
import type { Hold } from '../model/hold-states.js';
import {
  holdHelpers,
  runHoldCall,
  schemaOf,
  statement,
  type ConfirmHoldArgs,
  type CreateHoldArgs,
  type ExtendHoldArgs,
  type FunctionCall,
  type HoldCallOptions,
} from './calls.js';

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

function run(trx: KyselyExecutor, c: FunctionCall, options: HoldCallOptions): Promise<Hold> {
  const { text, values } = statement(c, schemaOf(options));
  return runHoldCall(() => trx.executeQuery(CompiledQuery.raw(text, values)));
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions };

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<KyselyExecutor>(run);
