import { sql, type SQL } from 'drizzle-orm';
import { holdHelpers, selectAround, type FunctionCall } from './calls.js';

/**
 * leasehold/drizzle: holds inside a Drizzle transaction, on either of its
 * PostgreSQL drivers (drizzle-orm/node-postgres, drizzle-orm/postgres-js).
 *
 *   await db.transaction(async (tx) => {
 *     await tx.insert(bookings).values(booking);
 *     await createHold(tx, { id: booking.id, customerEmail, ttlSeconds: 1200 });
 *   });
 *
 * The statement is built with Drizzle's `sql` template: every value is a
 * bound parameter, the schema an identifier (sql.identifier), and the only
 * raw text this module's constants (function and argument names, casts).
 */
export interface DrizzleExecutor {
  execute(query: SQL): PromiseLike<unknown>;
}

function toSql(c: FunctionCall, schema: string): SQL {
  const args = sql.join(
    c.args.map((a) => sql`${sql.raw(a.name)} => ${a.value}::${sql.raw(a.cast)}`),
    sql`, `,
  );
  const { before, after } = selectAround(c, schema);
  return sql`${sql.raw(before)}${sql.identifier(schema)}.${sql.raw(c.fn)}(${args})${sql.raw(after)}`;
}

export type { CreateHoldArgs, ExtendHoldArgs, ConfirmHoldArgs, HoldCallOptions } from './calls.js';

export const { createHold, confirmHold, cancelHold, extendHold } = holdHelpers<DrizzleExecutor>((tx, c, schema) => tx.execute(toSql(c, schema)));
