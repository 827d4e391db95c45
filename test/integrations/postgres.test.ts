import postgres from 'postgres';
import * as leasehold from '../../src/integrations/postgres.js';
import { describeOrmHolds } from '../helpers/orm-holds.js';

describeOrmHolds<postgres.TransactionSql>('postgres.js', async (db) => {
  const sql = postgres(db.url, { max: 2, onnotice: () => {}, connection: { search_path: db.schema } });
  return {
    transaction: async (work) => void (await sql.begin((tx) => work(tx))),
    insertBooking: async (tx, b) => void (await tx`INSERT INTO bookings (id, hold_id) VALUES (${b.id}, ${b.holdId})`),
    ...leasehold,
    close: () => sql.end(),
  };
});
