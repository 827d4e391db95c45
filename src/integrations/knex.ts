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

function run(trx: KnexExecutor, c: FunctionCall, options: HoldCallOptions): Promise<Hold> {
  const { text, values } = statement(c, schemaOf(options), () => '?');
  return runHoldCall(() => trx.raw(text, values));
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions };

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<KnexExecutor>(run);
