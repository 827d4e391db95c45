import { pgTable, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import * as leasehold from '../../src/integrations/drizzle.js';
import { describeOrmHolds } from '../helpers/orm-holds.js';

const bookings = pgTable('bookings', { id: text('id').primaryKey(), holdId: text('hold_id').notNull() });

type PgTx = Parameters<Parameters<ReturnType<typeof drizzlePg>['transaction']>[0]>[0];
type PostgresJsTx = Parameters<Parameters<ReturnType<typeof drizzlePostgresJs>['transaction']>[0]>[0];

describeOrmHolds<PgTx>('Drizzle node-postgres', async (db) => {
  const pool = new pg.Pool({ connectionString: db.url, max: 2, options: `-c search_path=${db.schema}` });
  const orm = drizzlePg(pool);
  return {
    transaction: (work) => orm.transaction(work),
    insertBooking: async (tx, b) => void (await tx.insert(bookings).values(b)),
    ...leasehold,
    close: () => pool.end(),
  };
});

describeOrmHolds<PostgresJsTx>('Drizzle postgres-js', async (db) => {
  const sql = postgres(db.url, { max: 2, onnotice: () => {}, connection: { search_path: db.schema } });
  const orm = drizzlePostgresJs(sql);
  return {
    transaction: (work) => orm.transaction(work),
    insertBooking: async (tx, b) => void (await tx.insert(bookings).values(b)),
    ...leasehold,
    close: () => sql.end(),
  };
});
