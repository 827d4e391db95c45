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
 * leasehold/postgres: holds inside a postgres.js (`postgres` package)
 * transaction.
 *
 *   await sql.begin(async (tx) => {
 *     await tx`INSERT INTO bookings ${tx(booking)}`;
 *     await createHold(tx, { id: booking.id, customerEmail, ttlSeconds: 1200 });
 *   });
 *
 * One `tx.unsafe(text, parameters)`: "unsafe" is postgres.js' name for a
 * statement whose text is not a tagged template; the text here is this
 * module's constant and every value is a bound parameter ($1, $2, ...).
 * postgres.js itself is not imported.
 */
export interface PostgresJsExecutor {
  unsafe(query: string, parameters: any[]): PromiseLike<unknown>;
}

function run(tx: PostgresJsExecutor, c: FunctionCall, options: HoldCallOptions): Promise<Hold> {
  const { text, values } = statement(c, schemaOf(options));
  return runHoldCall(() => tx.unsafe(text, values));
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions };

export const createHold = (tx: PostgresJsExecutor, input: CreateHoldArgs, options: HoldCallOptions = {}): Promise<Hold> =>
  run(tx, createHoldCall(input), options);
export const confirmHold = (tx: PostgresJsExecutor, id: string, options: HoldCallOptions & ConfirmHoldArgs = {}): Promise<Hold> =>
  run(tx, confirmHoldCall(id, options), options);
export const cancelHold = (tx: PostgresJsExecutor, id: string, options: HoldCallOptions = {}): Promise<Hold> => run(tx, cancelHoldCall(id), options);
export const extendHold = (tx: PostgresJsExecutor, id: string, change: ExtendHoldArgs, options: HoldCallOptions = {}): Promise<Hold> =>
  run(tx, extendHoldCall(id, change), options);
