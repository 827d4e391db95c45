import { holdHelpers, statement } from './calls.js';

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

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions } from './calls.js';

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<PrismaExecutor>((tx, c, schema) => {
  const { text, values } = statement(c, schema);
  return tx.$queryRawUnsafe(text, ...values);
});
