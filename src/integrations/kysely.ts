import { CompiledQuery, type QueryResult } from 'kysely';
import type { Hold } from '../model/hold-states.js';
import {
  cancelHoldCall,
  confirmHoldCall,
  createHoldCall,
  extendHoldCall,
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

export const createHold = (trx: KyselyExecutor, input: CreateHoldArgs, options: HoldCallOptions = {}): Promise<Hold> =>
  run(trx, createHoldCall(input), options);
export const confirmHold = (trx: KyselyExecutor, id: string, options: HoldCallOptions & ConfirmHoldArgs = {}): Promise<Hold> =>
  run(trx, confirmHoldCall(id, options), options);
export const cancelHold = (trx: KyselyExecutor, id: string, options: HoldCallOptions = {}): Promise<Hold> => run(trx, cancelHoldCall(id), options);
export const extendHold = (trx: KyselyExecutor, id: string, change: ExtendHoldArgs, options: HoldCallOptions = {}): Promise<Hold> =>
  run(trx, extendHoldCall(id, change), options);
