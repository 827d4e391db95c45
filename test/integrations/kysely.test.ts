import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import * as leasehold from '../../src/integrations/kysely.js';
import { describeOrmHolds } from '../helpers/orm-holds.js';

interface Database {
  bookings: { id: string; hold_id: string };
}

describeOrmHolds<Transaction<Database>>('Kysely', async (db) => {
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url, max: 2, options: `-c search_path=${db.schema}` }) }),
  });
  return {
    transaction: (work) => kysely.transaction().execute(work),
    insertBooking: async (trx, b) => void (await trx.insertInto('bookings').values({ id: b.id, hold_id: b.holdId }).execute()),
    ...leasehold,
    close: () => kysely.destroy(),
  };
});
