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
 * leasehold/prisma: holds inside a Prisma interactive transaction.
 *
 *   await prisma.$transaction(async (tx) => {
 *     await tx.booking.create({ data: booking });
 *     await createHold(tx, { id: booking.id, customerEmail, ttlSeconds: 1200 });
 *   });
 *
 * One `tx.$queryRawUnsafe(text, ...values)`: Prisma's raw query whose text
 * is not a tagged template (the text is this module's constant, with the
 * schema quoted), every value a bound parameter ($1, $2, ...). Prisma is not
 * imported: any client or transaction client with `$queryRawUnsafe` will do
 * (tested with Prisma 7 and @prisma/adapter-pg).
 */
export interface PrismaExecutor {
  $queryRawUnsafe<T = unknown>(query: string, ...values: any[]): PromiseLike<T>;
}

function run(tx: PrismaExecutor, c: FunctionCall, options: HoldCallOptions): Promise<Hold> {
  const { text, values } = statement(c, schemaOf(options));
  return runHoldCall(() => tx.$queryRawUnsafe(text, ...values));
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions };

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<PrismaExecutor>(run);
