import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Queryable } from './pool.js';
import { remember } from '../remember.js';

/**
 * The hottest statement run as a named (server-side prepared) statement on
 * leasehold's own pools: each connection parses, analyses and plans it
 * once instead of on every call. The expiry statement runs a hundred times
 * a second at 1,000 holds a second; parsed, analysed and planned every time
 * it cost 3.8 ms on an idle PostgreSQL 15, prepared 2.0 (BENCHMARKS.md).
 *
 * Only where it is safe and known to pay:
 * - on a pg.Pool alone, where each call is one autocommit statement on a
 *   connection of the pool's own. A client (an application's transaction,
 *   the expiry hook's) runs it unnamed: a refused name there would abort
 *   the caller's transaction, and a retry could not run in it.
 * - for statements whose plan does not depend on their parameters' values
 *   (the expiry statement's bounds are its clock, read at run time in
 *   either plan; test/db/prepared.test.ts compares the generic plan's rows
 *   read with the custom one's). The fair lease and the record statement
 *   stay unnamed: their generic plans ran 40 and 1.3 times slower
 *   (docs/scaling.md).
 *
 * Behind a transaction-mode pooler without prepared-statement support
 * (PgBouncer before 1.21, or with `max_prepared_statements = 0`) a name
 * parsed on one server connection is missing on the next, or already
 * there from another client. The server refuses such a statement before
 * running it (26000, 42P05), and so does a cached plan whose result type a
 * migration changed (0A000): the statement then runs unnamed at once, and
 * that pool runs unnamed from then on.
 */
const unnamedPools = new WeakSet<pg.Pool>();

/** SQLSTATEs of a named statement the server refused before running it. */
const REFUSED = new Set(['26000', '42P05', '0A000']);

export async function queryPrepared<R extends pg.QueryResultRow = any>(db: Queryable, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  if (!(db instanceof pg.Pool) || unnamedPools.has(db)) return db.query<R>(text, values);
  try {
    return await db.query<R>({ name: statementName(text), text, values });
  } catch (error) {
    if (!REFUSED.has((error as { code?: string }).code ?? '')) throw error;
    unnamedPools.add(db);
    return db.query<R>(text, values);
  }
}

/** Whether `pool` gave up naming statements (a pooler refused one). */
export const preparedRefused = (pool: pg.Pool): boolean => unnamedPools.has(pool);

/**
 * The statement's name: a digest of its text, so one name is always one
 * text (pg refuses a name reused for another text, and behind a pooler
 * another client's statement of the same name is the same statement).
 * Remembered per text; the texts are few (one per schema and variant).
 */
const names = new Map<string, string>();
function statementName(text: string): string {
  return remember(names, text, () => `leasehold_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`, 256);
}
