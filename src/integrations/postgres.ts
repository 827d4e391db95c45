import { holdHelpers, statement } from './calls.js';

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

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions } from './calls.js';

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<PostgresJsExecutor>((tx, c, schema) => {
  const { text, values } = statement(c, schema);
  return tx.unsafe(text, values);
});
